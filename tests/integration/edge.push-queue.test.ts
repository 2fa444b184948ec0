import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freshRequest } from '../support/admin-http'
import { panelEnvFor, postDecisions, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { eventually } from '../support/http'
import { createPublicClientNamespace, type PublicClientNamespace } from '../support/netns'
import { registerTestSecret } from '../support/panel'
import { startNamespaceProber, type ProbeAnswer } from '../support/prober'
import { makeTempDir } from '../support/processes'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream } from '../support/upstream'
import { sessionApi } from '../support/api-client'
import { afterLoopRuns } from '../support/loops'

// Every push meets the bouncer: each /load restarts it with an empty decision
// store. A banned source, probing all the time from the public-client namespace
// through the production Caddy and the whole engine, must never get through:
// not across a burst of host changes (the pushed configuration refuses the
// sources banned at push time while the new bouncer loads), not while the local
// API is down (the push waits for it).

const HOST_ADDRESS = '198.51.100.1'
const ALLOWED = '198.51.100.10' // inside the harness whitelist: the engine never bans it by itself
const BANNED = '198.51.100.200' // outside it: banned by the test (like cscli decisions add)
const GUARDED = 'guarded.example.test'
const ENGINE_DEFERRED = /^security engine unreachable: push deferred so the proxy keeps enforcing the decisions it holds/

let up: Awaited<ReturnType<typeof startTestUpstream>>
let ns: PublicClientNamespace
let cs: CrowdsecHandle
let stack: ProxyStack
let guardedId: number
let groupId: number

const api = sessionApi(() => ({ panel: stack.panel, cookie: stack.admin }))
const fromNamespace = (from: string) =>
  ns.curl(`http://${HOST_ADDRESS}:${stack.httpPort}/x`, ['-H', `Host: ${GUARDED}`], { fromAddress: from })
const prober = (from: string) => startNamespaceProber(ns, { address: HOST_ADDRESS, port: stack.httpPort, host: GUARDED, fromAddress: from })
/** POST /load requests the proxy received (its admin API logs each one). */
const loadRequests = () =>
  readFileSync(stack.caddy.logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"msg":"received request"') && l.includes('"uri":"/load"')).length
const auditCount = async (action: string) =>
  Number(
    (await stack.panel.db().execute({ sql: 'SELECT count(*) AS n FROM logs WHERE source = ? AND message = ?', args: ['audit', action] }))
      .rows[0]!.n,
  )
const proxyConfigText = async () => (await freshRequest(`${stack.caddy.adminUrl}/config/`)).body
/** HTTP answers other than 403 (status 0 is no answer at all: a connection reset while the proxy reloads). */
const notForbidden = (answers: ProbeAnswer[]) => answers.filter((a) => a.status !== 0 && a.status !== 403)
const resets = (answers: ProbeAnswer[]) => answers.filter((a) => a.status === 0).length

/** The host's full body with new aliases: one PUT = one new configuration. */
async function setAliases(aliases: string[], extra: Record<string, unknown> = {}) {
  return api(`/api/hosts/${guardedId}`, 'PUT', { domain: GUARDED, target_group_id: groupId, tls_mode: 'none', aliases, ...extra })
}

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: HOST_ADDRESS, clientAddresses: [ALLOWED, BANNED] })
  const logDir = makeTempDir('push-queue-logs-')
  cs = await startCrowdsec({ logDir })
  registerTestSecret(cs.bouncerKey, cs.machinePassword)
  // Without CROWDSEC_CONFIG_DIR: the panel's empty whitelist file (panel-whitelist.yaml with
  // `ip: []` and `cidr: []`) makes CrowdSec 1.7.8's agent refuse to start again ("Node is empty").
  const { CROWDSEC_CONFIG_DIR: _c, CROWDSEC_HUB_DIR: _h, CROWDSEC_DATA_DIR: _d, ...lapiEnv } = panelEnvFor(cs)
  stack = await startProxyStack({ env: lapiEnv, httpListenExtra: [HOST_ADDRESS], logDir })
  // 1 s instead of 15 s keeps the file short; the bounds themselves are tested below.
  expect((await api('/api/settings', 'PUT', { 'security_engine.ticker_interval': '1s' })).status).toBe(200)
  groupId = (await createGroup(stack, { name: 'g', targets: [{ address: `127.0.0.1:${up.port}` }] })).id
  const host = await createHost(stack, { domain: GUARDED, target_group_id: groupId })
  expect(host.status).toBe(201)
  expect(host.json.reconcile.status).toBe('applied')
  guardedId = host.json.id
  await postDecisions(cs, [{ value: BANNED }])
})
afterAll(async () => {
  await stack?.stop()
  await cs?.stop()
  await ns?.destroy()
  await up?.stop()
})

describe('security_engine.ticker_interval bounds (PUT /api/settings)', () => {
  it.each(['0s', '1ms', '999ms', '10m1s', '1h'])('%s: 400 naming the bounds, nothing changed', async (value) => {
    const res = await api('/api/settings', 'PUT', { 'security_engine.ticker_interval': value })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/^security_engine\.ticker_interval: must be from 1s to 10m/)
    expect((await api('/api/settings')).json['security_engine.ticker_interval']).toBe('1s')
  })
})

describe('a banned source through the production proxy and the whole engine', () => {
  it('gets 403 once the bouncer has polled; the allowed source is served', async () => {
    const banned = await eventually(
      () => fromNamespace(BANNED),
      (r) => r.status === 403,
      20_000,
    )
    expect(banned.status).toBe(403)
    expect((await fromNamespace(ALLOWED)).status).toBe(200)
  })

  it('20 host changes in quick succession: never a non-403 answer, the admin API answers, and the loop adds no push', async () => {
    expect(
      (
        await eventually(
          () => fromNamespace(BANNED),
          (r) => r.status === 403,
          20_000,
        )
      ).status,
    ).toBe(403)
    const loadsBefore = loadRequests()
    const auditsBefore = await auditCount('proxy_reconcile')
    const bannedProbe = prober(BANNED),
      allowedProbe = prober(ALLOWED)
    // Each /load replaces Caddy's admin server: a request caught in the swap is reset,
    // and answered when sent again at once. Counted, not hidden.
    const adminAnswers: Array<{ status: number; ms: number; resets: number }> = []
    let probingAdmin = true
    const adminLoop = (async () => {
      while (probingAdmin) {
        const t0 = performance.now()
        let resets = 0
        let r = await freshRequest(`${stack.caddy.adminUrl}/config/`, { timeoutMs: 5_000 }).catch(() => ({ status: 0 }))
        if (r.status === 0) {
          resets++
          r = await freshRequest(`${stack.caddy.adminUrl}/config/`, { timeoutMs: 5_000 }).catch(() => ({ status: 0 }))
        }
        adminAnswers.push({ status: r.status, ms: performance.now() - t0, resets })
        await new Promise((r) => setTimeout(r, 50))
      }
    })()
    try {
      await eventually(
        async () => bannedProbe.answers().length,
        (n) => n >= 5,
        10_000,
        50,
      )
      // All at once: they queue in the write queue, each pushes its own configuration.
      const changes = await Promise.all(Array.from({ length: 20 }, (_, i) => setAliases([`a${i}.${GUARDED}`])))
      for (const c of changes) expect([c.status, c.json.reconcile?.status]).toEqual([200, 'applied'])
      // Three loop ticks after the burst: the loop must find the proxy in sync.
      await afterLoopRuns(stack.panel, stack.admin, 'proxy:reconcile', 3)
    } finally {
      probingAdmin = false
      await adminLoop
      await bannedProbe.stop()
      await allowedProbe.stop()
    }
    const banned = bannedProbe.answers(),
      allowed = allowedProbe.answers()
    console.log(
      `[push-queue] burst: banned ${banned.length} probes (${resets(banned)} reset), allowed ${allowed.length} (${allowed.filter((a) => a.status === 200).length} x 200, ${resets(allowed)} reset), admin API ${adminAnswers.length} answers (${adminAnswers.filter((a) => a.resets).length} after a reset), slowest ${Math.max(...adminAnswers.map((a) => a.ms)).toFixed(0)} ms`,
    )
    expect(banned.length).toBeGreaterThan(50)
    expect(notForbidden(banned)).toEqual([])
    expect(allowed.filter((a) => a.status === 200).length).toBeGreaterThan(50)
    expect(adminAnswers.filter((a) => a.status !== 200)).toEqual([])
    expect(loadRequests() - loadsBefore).toBe(20)
    // What closed the bouncer's first-pull window: the pushed configuration refuses the banned source first.
    const held = await proxyConfigText()
    expect(held).toContain('"@id":"bouncer_warmup_http"')
    expect(held).toContain(`"${BANNED}"`)
    expect((await auditCount('proxy_reconcile')) - auditsBefore).toBe(20)
  })

  it('the engine is down: a host change is deferred, the ban holds on every probe, and the change is pushed once the engine answers', async () => {
    const bannedProbe = prober(BANNED)
    try {
      await eventually(
        async () => bannedProbe.answers().length,
        (n) => n >= 5,
        10_000,
        50,
      )
      await cs.stop()
      const loadsBefore = loadRequests()
      const res = await setAliases(['deferred.guarded.example.test'])
      expect(res.status).toBe(200)
      expect(res.json.reconcile.status).toBe('pending')
      expect(res.json.reconcile.error).toMatch(ENGINE_DEFERRED)
      expect(await api(`/api/hosts/${guardedId}`).then((r) => r.json.aliases)).toEqual(['deferred.guarded.example.test'])
      const health = await api('/api/dashboard/health')
      expect(health.json.proxy.last_reconcile_status).toBe('pending')
      expect(health.json.proxy.last_error).toMatch(ENGINE_DEFERRED)
      expect(await auditCount('proxy_push_deferred')).toBe(1)

      // Three loop ticks with the engine down: still not pushed, no further record.
      await afterLoopRuns(stack.panel, stack.admin, 'proxy:reconcile', 3)
      expect(loadRequests()).toBe(loadsBefore)
      expect(await proxyConfigText()).not.toContain('deferred.guarded.example.test')
      expect(await auditCount('proxy_push_deferred')).toBe(1)
      const during = bannedProbe.answers().length

      await cs.restart()
      const pushed = await eventually(proxyConfigText, (t) => t.includes('deferred.guarded.example.test'), 20_000, 200)
      expect(pushed).toContain('deferred.guarded.example.test')
      expect(loadRequests()).toBe(loadsBefore + 1)
      expect((await api('/api/dashboard/health')).json.proxy.last_reconcile_status).toBe('ok')
      // Probes across and after the deferred push (the new bouncer starts from the engine's decisions).
      const after = bannedProbe.answers().length
      await eventually(
        async () => bannedProbe.answers().length,
        (n) => n >= after + 100,
        15_000,
        100,
      )
      expect(bannedProbe.answers().length).toBeGreaterThan(during)
    } finally {
      await bannedProbe.stop()
    }
    const banned = bannedProbe.answers()
    console.log(
      `[push-queue] engine down: ${banned.length} banned answers, statuses ${JSON.stringify(Object.fromEntries([...new Set(banned.map((a) => a.status))].map((s) => [s, banned.filter((a) => a.status === s).length])))}`,
    )
    expect(notForbidden(banned)).toEqual([])
    const reasons = (
      await stack.panel.db().execute("SELECT raw FROM logs WHERE message = 'proxy_reconcile' ORDER BY id DESC LIMIT 1")
    ).rows.map((r) => JSON.parse(String(r.raw)).reason)
    expect(reasons).toEqual(['the security engine answers again: pushing the deferred change'])
    expect((await fromNamespace(BANNED)).status).toBe(403)
  })

  it('with no enabled host using the bouncer, a change is pushed while the engine is down', async () => {
    await cs.stop()
    try {
      const res = await setAliases(['unguarded.guarded.example.test'], { bouncer_enabled: false })
      expect(res.status).toBe(200)
      expect(res.json.reconcile).toEqual({ status: 'applied' })
      expect(await proxyConfigText()).toContain('unguarded.guarded.example.test')
      expect(await proxyConfigText()).not.toContain('"crowdsec"')
    } finally {
      await cs.restart()
    }
  })
})
