import { request as nodeRequest } from 'node:http'
import { performance } from 'node:perf_hooks'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startCaddy } from '../tests/support/caddy'
import { freePort } from '../tests/support/ports'
import { startTestUpstream } from '../tests/support/upstream'
import { httpRequest } from '../tests/support/http'
import { buildProxyConfig, stableStringify } from '../server/utils/proxy/build/index'
import type { ProxySnapshot } from '../server/utils/proxy/build/types'
import { HOST_KIND_DEFAULTS } from '../server/utils/hosts/kind-schemas'
import { loadProxyConfig } from '../server/utils/proxy/nodes/client'
import { median, ratioOf, reportFigures, type Figure } from './report'

// Budgets (design.md): build + push 1,000 hosts <= 0.5 s, 10,000 hosts <= 5 s, to the real Caddy.
const PAIRS = 3
let caddy: Awaited<ReturnType<typeof startCaddy>>
let upstream: Awaited<ReturnType<typeof startTestUpstream>>
let httpPort: number

beforeAll(async () => {
  caddy = await startCaddy()
  upstream = await startTestUpstream()
  httpPort = await freePort()
})
afterAll(async () => {
  await caddy?.stop()
  await upstream?.stop()
})

function snapshotWith(hostCount: number): ProxySnapshot {
  return {
    adminListen: caddy.adminListen,
    storageRoot: caddy.storageDir,
    renewIntervalSeconds: null,
    logDir: caddy.workDir,
    modules: [],
    httpListen: [`127.0.0.1:${httpPort}`],
    httpsListen: ['127.0.0.1:1'],
    httpPort,
    httpsPort: 1,
    panelUpstream: { dial: '127.0.0.1:3000', tls: false },
    acme: { email: null, caUrl: null, trustedRootsPemFile: null },
    security: { lapiUrl: 'http://127.0.0.1:8080', bouncerKey: null, tickerInterval: '15s', appsecUrl: null },
    waf: { inboundThreshold: 5, outboundThreshold: 4 },
    dnsProviders: {},
    manualCerts: [],
    whitelist: [],
    clientIp: { trustedProxies: [], headers: ['X-Forwarded-For'] },
    targetGroups: [
      {
        id: 1,
        name: 'bench',
        targets: [{ address: `127.0.0.1:${upstream.port}`, weight: 1 }],
        scheme: 'http',
        lb_policy: 'round_robin',
        health_check: null,
        tls_skip_verify: false,
      },
    ],
    rules: [],
    wafExclusions: [],
    hosts: Array.from({ length: hostCount }, (_, i) => ({
      id: i + 1,
      domain: `h${i + 1}.bench.test`,
      aliases: [],
      target_group_id: 1,
      enabled: true,
      tls_mode: 'none' as const,
      tls_challenge: 'http' as const,
      tls_email: null,
      tls_dns_provider: null,
      tls_acme_ca_url: null,
      lan_only: i % 3 === 0,
      auth_required: i % 5 === 0,
      bouncer_enabled: true,
      waf_enabled: false,
      waf_mode: 'detection' as const,
      rate_limit_enabled: false,
      rate_limit_rps: 50,
      rate_limit_burst: 100,
      true_detect_mode: false,
      engine_down_refuse: false,
      waf_profile: 'full' as const,
      waf_families: ['sqli', 'xss'],
      waf_body_limit_kb: null,
      waf_body_max_args: null,
      waf_json_max_depth: null,
      waf_body_limit_action: null,
      waf_allowed_content_types: null,
      custom_handlers: [],
      custom_handlers_at: 'before_proxy' as const,
      compression: 'inherit' as const,
      header_rules: [],
      upstream_host: null,
      hsts: null,
      security_headers: false,
      csp: null,
      ...HOST_KIND_DEFAULTS,
      error_pages: 'inherit',
      error_page_message: null,
      geo_policy: null,
      auth_allowed_users: [],
      auth_allowed_groups: [],
    })),
  }
}

async function measure(hostCount: number) {
  const snapshot = snapshotWith(hostCount)
  const t0 = performance.now()
  const json = stableStringify(buildProxyConfig(snapshot).config)
  const t1 = performance.now()
  const result = await loadProxyConfig(caddy.adminUrl, json)
  const t2 = performance.now()
  expect(result.outcome).toBe('applied')
  return { buildMs: t1 - t0, pushMs: t2 - t1, bytes: json.length, json }
}

/**
 * The limit: the same JSON posted straight to Caddy's /load with node:http (Node's fetch
 * sends Sec-Fetch-Mode, which Caddy's admin API refuses with 403 as a browser request).
 */
function postLoadDirectly(json: string): Promise<number> {
  const t = performance.now()
  return new Promise((resolve, reject) => {
    const req = nodeRequest(
      `${caddy.adminUrl}/load`,
      { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) } },
      (res) => {
        res.resume()
        res.on('end', () => {
          try {
            expect(res.statusCode).toBe(200)
            resolve(performance.now() - t)
          } catch (e) {
            reject(e)
          }
        })
      },
    )
    req.on('error', reject)
    req.end(json)
  })
}

it('builds and pushes 1,000 and 10,000 hosts, and measures a request through 1,000 hosts', async () => {
  const figures: Figure[] = []
  for (const [count, budgetMs] of [
    [1_000, 500],
    [10_000, 5_000],
  ] as const) {
    await measure(count) // warm-up (JIT, Caddy's first provisioning)
    // Caddy's own load time varies by tens of ms from one load to the next: pairs alternate, medians are compared.
    const panel: Array<Awaited<ReturnType<typeof measure>>> = []
    const direct: number[] = []
    for (let pair = 0; pair < PAIRS; pair++) {
      const m = await measure(count + 1 + pair)
      panel.push(m)
      // Same JSON with one byte changed in a host name, so Caddy does not skip an identical load.
      direct.push(await postLoadDirectly(m.json.replace(`h1.bench.test`, `h0.bench.test`)))
    }
    const m = {
      buildMs: median(panel.map((p) => p.buildMs)),
      pushMs: median(panel.map((p) => p.pushMs)),
      totalMs: median(panel.map((p) => p.buildMs + p.pushMs)),
      bytes: panel[0]!.bytes,
    }
    const directMs = median(direct)
    figures.push(
      { what: `build ${count} hosts (median)`, value: Math.round(m.buildMs), unit: 'ms', budget: '-', withinBudget: true },
      {
        what: `push ${count} hosts (${(m.bytes / 1e6).toFixed(1)} MB JSON)`,
        value: Math.round(m.pushMs),
        unit: 'ms',
        budget: '-',
        withinBudget: true,
      },
      {
        what: `build + push ${count} hosts`,
        value: Math.round(m.totalMs),
        unit: 'ms',
        budget: `<= ${budgetMs}`,
        withinBudget: m.totalMs <= budgetMs,
        ratio: ratioOf(
          m.totalMs,
          directMs,
          `the same JSON posted to /load, ${Math.round(directMs)} ms (medians of ${PAIRS} alternated pairs)`,
          '<= 1.1',
        ),
      },
    )
  }
  await measure(1_000)
  const samples: number[] = []
  // Hosts without ForwardAuth (that would add a sub-request to a panel not running here).
  const plain = Array.from({ length: 1000 }, (_, i) => i)
    .filter((i) => i % 5 !== 0)
    .map((i) => `h${i + 1}.bench.test`)
  for (let i = 0; i < 300; i++) {
    const host = plain[(i * 37) % plain.length]!
    const t = performance.now()
    const r = await httpRequest({ port: httpPort, host, path: '/' })
    samples.push(performance.now() - t)
    if (r.status !== 200) throw new Error(`unexpected ${r.status} for ${host}`)
  }
  samples.sort((a, b) => a - b)
  figures.push(
    {
      what: 'request through Caddy with 1,000 hosts, p50',
      value: Number(samples[150]!.toFixed(2)),
      unit: 'ms',
      budget: '-',
      withinBudget: true,
    },
    {
      what: 'request through Caddy with 1,000 hosts, p99',
      value: Number(samples[296]!.toFixed(2)),
      unit: 'ms',
      budget: '-',
      withinBudget: true,
    },
  )
  reportFigures('reconcile', figures)
})
