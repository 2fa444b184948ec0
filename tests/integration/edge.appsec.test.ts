import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decisionsFor, panelEnvFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { hostSubroutes } from '../support/factories'
import { eventually } from '../support/http'
import { createPublicClientNamespace } from '../support/netns'
import { registerTestSecret } from '../support/panel'
import { makeTempDir } from '../support/processes'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream } from '../support/upstream'

// The engine's AppSec component with the project's own configuration and rules
// (deploy/crowdsec), the production Caddy's bouncer asking it about every
// request (the panel's LAPI_APPSEC_URL), and a client on a public address in a
// network namespace. The client is inside the harness whitelist, so the agent's
// own scenarios never ban it: every 403 here is AppSec's verdict on one request.

const CLIENT = '198.51.100.31'
const HOST = 'shop.example.test'
const SQLI = "/search?q=1'%20or%201%3D1--" // libinjection SQLi: score 5
const SCANNER_UA = 'sqlmap/1.7' // a scanner user agent: score 3

let up: Awaited<ReturnType<typeof startTestUpstream>>
let ns: Awaited<ReturnType<typeof createPublicClientNamespace>>
let cs: CrowdsecHandle
let stack: ProxyStack

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: '198.51.100.1', clientAddresses: [CLIENT] })
  const logDir = makeTempDir('proxy-logs-')
  cs = await startCrowdsec({ logDir, appsec: true })
  registerTestSecret(cs.machinePassword, cs.bouncerKey)
  stack = await startProxyStack({ env: panelEnvFor(cs), logDir, httpListenExtra: ['198.51.100.1'] })
  const group = await createGroup(stack, { name: 'shop', targets: [{ address: `127.0.0.1:${up.port}` }] })
  expect((await createHost(stack, { domain: HOST, target_group_id: group.id })).status).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await cs?.stop()
  await ns?.destroy()
  await up?.stop()
})

/** One request from the public client through the proxy; `seen` says whether the upstream got it. */
async function fromClient(path: string, headers: string[] = []) {
  const before = up.requests.length
  const res = await ns.curl(`http://198.51.100.1:${stack.httpPort}${path}`, ['-H', `Host: ${HOST}`, ...headers.flatMap((h) => ['-H', h])], {
    fromAddress: CLIENT,
  })
  return { status: res.status, seen: up.requests.length > before, request: up.requests.at(-1) }
}
const tune = (inbound: number) =>
  stack.panel.request('/api/security/appsec-tuning', {
    method: 'PUT',
    cookie: stack.admin,
    body: { inbound_threshold: inbound, outbound_threshold: 4 },
  })
const engineLog = () => readFileSync(cs.logFile, 'utf8')

describe("the proxy asks the engine's AppSec component", () => {
  it('the pushed configuration sets appsec_url and runs appsec right after the bouncer', async () => {
    const config = (await stack.caddy.getConfig()) as any
    expect(config.apps.crowdsec).toMatchObject({ appsec_url: cs.appsecUrl, appsec_fail_open: true })
    // The chain that holds the bouncer, wherever it is nested (compression, on for a new panel, wraps what follows).
    const chains = (routes: any[]): string[][] =>
      routes.flatMap((r) => [r.handle.map((h: any) => h.handler), ...r.handle.flatMap((h: any) => (h.routes ? chains(h.routes) : []))])
    const chain = chains(hostSubroutes(config, HOST)).find((c) => c.includes('crowdsec'))!
    expect(chain.slice(chain.indexOf('crowdsec'), chain.indexOf('crowdsec') + 2)).toEqual(['crowdsec', 'appsec'])
  })

  it('a clean request passes (200) and reaches the upstream without the threshold header', async () => {
    const res = await fromClient('/search?q=running%20shoes')
    expect(res.status).toBe(200)
    expect(res.seen).toBe(true)
    expect(res.request!.headers['x-panel-appsec-threshold']).toBeUndefined()
  })

  it.each([
    ['an SQL injection', SQLI, [], /WAF block: Inbound anomaly score 5 reached the threshold 5 from 198\.51\.100\.31/],
    [
      'cross-site scripting',
      '/search?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E',
      [],
      /WAF block: Inbound anomaly score 5 reached the threshold 5 from 198\.51\.100\.31/,
    ],
    ['a secret file', '/.env', [], /WAF block: panel\/appsec-sensitive-files from 198\.51\.100\.31/],
    // The proxy overwrites a client's own threshold header: 10000 would let everything through.
    [
      'an SQL injection with a forged threshold header',
      SQLI,
      ['X-Panel-Appsec-Threshold: 10000'],
      /WAF block: Inbound anomaly score 5 reached the threshold 5 from 198\.51\.100\.31/,
    ],
  ])('%s gets 403 from AppSec and never reaches the upstream', async (_what, path, headers, logLine) => {
    const logBefore = engineLog().length
    const res = await fromClient(path, headers)
    expect(res.status).toBe(403)
    expect(res.seen).toBe(false)
    // AppSec's own verdict on that request, not a ban: the engine logs the block (from its alert
    // pipeline, a moment after the answer), and no decision exists.
    expect(
      await eventually(
        async () => engineLog().slice(logBefore),
        (l) => logLine.test(l),
        10_000,
        100,
      ),
    ).toMatch(logLine)
    expect(await decisionsFor(cs, CLIENT)).toEqual([])
  })
})

describe('the threshold tuning changes what is blocked, without an engine restart', () => {
  it('a scanner user agent (score 3) passes at 5 and is blocked at 3; an SQL injection (score 5) passes at 10', async () => {
    const pid = cs.pid
    const scanner = () => fromClient('/search?q=shoes', [`User-Agent: ${SCANNER_UA}`])
    expect((await scanner()).status).toBe(200)

    expect((await tune(3)).status).toBe(200)
    expect((await scanner()).status).toBe(403)
    expect((await fromClient('/search?q=shoes')).status).toBe(200)

    expect((await tune(10)).status).toBe(200)
    const sqli = await fromClient(SQLI)
    expect(sqli.status).toBe(200)
    expect(sqli.seen).toBe(true)
    // Both together score 8: still under 10.
    expect((await fromClient(SQLI, [`User-Agent: ${SCANNER_UA}`])).status).toBe(200)

    expect((await tune(5)).status).toBe(200)
    expect((await fromClient(SQLI)).status).toBe(403)
    // The same engine process throughout: the change travelled with the proxy configuration.
    expect(cs.pid).toBe(pid)
    const audit = await stack.panel.db().execute("SELECT count(*) AS n FROM logs WHERE message = 'settings_update'")
    expect(Number(audit.rows[0]!.n)).toBe(3)
  })
})
