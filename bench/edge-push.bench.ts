import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { freshRequest } from '../tests/support/admin-http'
import { panelEnvFor, postDecisions, startCrowdsec, type CrowdsecHandle } from '../tests/support/crowdsec'
import { eventually } from '../tests/support/http'
import { createPublicClientNamespace, type PublicClientNamespace } from '../tests/support/netns'
import { startNamespaceProber, type ProbeAnswer } from '../tests/support/prober'
import { makeTempDir } from '../tests/support/processes'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../tests/support/proxy-stack'
import { startTestUpstream } from '../tests/support/upstream'
import { stableStringify } from '../server/utils/proxy/build/index'
import { stripBouncerWarmup } from '../server/utils/proxy/build/crowdsec'
import { reportFigures, type Figure } from './report'

// How long a banned source can pass the production proxy's bouncer, measured
// from the public-client namespace through the real Caddy and the whole engine:
// - ban to 403: a decision posted to the engine until the first 403 (poll period);
// - push to enforcement: every /load restarts the bouncer with an empty store;
//   the window is how long after a reload banned requests still get 200
//   (the bouncer alone, then with the panel's pushes and their warm-up route);
// - engine down: pushes deferred, the ban holds; the deferred push once it answers.

const HOST_ADDRESS = '198.51.100.1'
const ALLOWED = '198.51.100.10'
const BANNED = ['198.51.100.200', '198.51.100.201', '198.51.100.202', '198.51.100.203', '198.51.100.204', '198.51.100.205']
const HOST = 'bench-push.example.test'
const PUSHES = 20

let up: Awaited<ReturnType<typeof startTestUpstream>>
let ns: PublicClientNamespace
let cs: CrowdsecHandle
let stack: ProxyStack
let hostId: number, groupId: number

const api = (path: string, method = 'GET', body?: unknown) => stack.panel.request(path, { method, cookie: stack.admin, body })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const prober = (from: string) =>
  startNamespaceProber(ns, { address: HOST_ADDRESS, port: stack.httpPort, host: HOST, fromAddress: from, intervalMs: 1, concurrency: 4 })
const loadsDone = () =>
  readFileSync(stack.caddy.logFile, 'utf8')
    .split('\n')
    .flatMap((l) => {
      try {
        const j = JSON.parse(l)
        return j.msg === 'load complete' ? [Math.round(j.ts * 1000)] : []
      } catch {
        return []
      }
    })

/** Leaks (2xx answers) grouped by the reload before them: count of reloads with one, total, and the longest window. */
function leakWindows(answers: ProbeAnswer[], loadTimes: number[]) {
  const leaks = answers.filter((a) => a.status >= 200 && a.status < 300)
  const byLoad = new Map<number, ProbeAnswer[]>()
  for (const leak of leaks) {
    const load = [...loadTimes].reverse().find((t) => t <= leak.doneAt) ?? 0
    byLoad.set(load, [...(byLoad.get(load) ?? []), leak])
  }
  // From the reload's "load complete" (the new server already serves) to the last answer that passed.
  const windows = [...byLoad].map(([load, ls]) => Math.max(...ls.map((l) => l.doneAt)) - load)
  return {
    reloadsWithLeak: byLoad.size,
    leaks: leaks.length,
    longestMs: windows.length ? Math.max(...windows) : 0,
    resets: answers.filter((a) => a.status === 0).length,
    answers: answers.length,
  }
}

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: HOST_ADDRESS, clientAddresses: [ALLOWED, ...BANNED] })
  const logDir = makeTempDir('edge-push-bench-')
  cs = await startCrowdsec({ logDir })
  // Without CROWDSEC_CONFIG_DIR: the panel's empty whitelist file stops the agent from starting again.
  const { CROWDSEC_CONFIG_DIR: _c, CROWDSEC_HUB_DIR: _h, CROWDSEC_DATA_DIR: _d, ...lapiEnv } = panelEnvFor(cs)
  stack = await startProxyStack({ env: lapiEnv, httpListenExtra: [HOST_ADDRESS], logDir })
  groupId = (await createGroup(stack, { name: 'g', targets: [{ address: `127.0.0.1:${up.port}` }] })).id
  hostId = (await createHost(stack, { domain: HOST, target_group_id: groupId })).json.id
})
afterAll(async () => {
  await stack?.stop()
  await cs?.stop()
  await ns?.destroy()
  await up?.stop()
})

async function banToForbidden(address: string): Promise<number> {
  const p = prober(address)
  try {
    await eventually(
      async () => p.answers().length,
      (n) => n > 5,
      10_000,
      20,
    )
    await postDecisions(cs, [{ value: address }])
    const t0 = Date.now()
    const first = await eventually(
      async () => p.answers().find((a) => a.status === 403 && a.sentAt >= t0),
      (a) => !!a,
      60_000,
      20,
    )
    return first ? first.sentAt - t0 : NaN
  } finally {
    await p.stop()
  }
}

it('ban to 403, push to enforcement, engine down', async () => {
  const figures: Figure[] = []
  const info = (what: string, value: number, unit = 'ms') => figures.push({ what, value, unit, budget: '-', withinBudget: true })

  expect((await api('/api/settings', 'PUT', { 'security_engine.ticker_interval': '1s' })).status).toBe(200)
  const fast = [await banToForbidden(BANNED[0]!), await banToForbidden(BANNED[1]!), await banToForbidden(BANNED[2]!)]
  info('ban to first 403, ticker 1s (worst of 3)', Math.max(...fast))
  expect((await api('/api/settings', 'PUT', { 'security_engine.ticker_interval': '15s' })).status).toBe(200)
  const slow = [await banToForbidden(BANNED[3]!), await banToForbidden(BANNED[4]!)]
  info('ban to first 403, ticker 15s (worst of 2)', Math.max(...slow))
  expect((await api('/api/settings', 'PUT', { 'security_engine.ticker_interval': '1s' })).status).toBe(200)

  // The bouncer alone: the configuration the proxy holds, without the warm-up route, reloaded.
  const bare = stableStringify(stripBouncerWarmup(JSON.parse((await freshRequest(`${stack.caddy.adminUrl}/config/`)).body)))
  let p = prober(BANNED[0]!)
  await eventually(
    async () => p.answers().length,
    (n) => n > 20,
    10_000,
    20,
  )
  const loadsBefore = loadsDone().length
  for (let i = 0; i < PUSHES; i++) {
    const r = await freshRequest(`${stack.caddy.adminUrl}/load`, {
      method: 'POST',
      body: bare,
      headers: { 'cache-control': 'must-revalidate' },
    })
    expect(r.status).toBe(200)
    await sleep(300)
  }
  await p.stop()
  const alone = leakWindows(p.answers(), loadsDone().slice(loadsBefore))
  info(`bouncer alone: reloads (of ${PUSHES}) a banned request passed after`, alone.reloadsWithLeak, 'count')
  info('bouncer alone: banned requests answered 200', alone.leaks, 'count')
  info('bouncer alone: longest window, load complete to last 200', alone.longestMs)
  info(`bouncer alone: probes sent (${alone.resets} reset)`, alone.answers, 'count')

  // The panel's pushes: one host change each, with the warm-up route.
  p = prober(BANNED[0]!)
  await eventually(
    async () => p.answers().length,
    (n) => n > 20,
    10_000,
    20,
  )
  const panelLoadsBefore = loadsDone().length
  for (let i = 0; i < PUSHES; i++) {
    const r = await api(`/api/hosts/${hostId}`, 'PUT', {
      domain: HOST,
      target_group_id: groupId,
      tls_mode: 'none',
      aliases: [`a${i}.${HOST}`],
    })
    expect(r.json.reconcile.status).toBe('applied')
    await sleep(300)
  }
  await p.stop()
  const gated = leakWindows(p.answers(), loadsDone().slice(panelLoadsBefore))
  info(`panel pushes: reloads (of ${PUSHES}) a banned request passed after`, gated.reloadsWithLeak, 'count')
  info('panel pushes: banned requests answered 200', gated.leaks, 'count')
  info(`panel pushes: probes sent (${gated.resets} reset)`, gated.answers, 'count')

  // Engine down: changes deferred, the ban holds; then the deferred push.
  p = prober(BANNED[0]!)
  await eventually(
    async () => p.answers().length,
    (n) => n > 20,
    10_000,
    20,
  )
  await cs.stop()
  for (let i = 0; i < 5; i++) {
    const r = await api(`/api/hosts/${hostId}`, 'PUT', {
      domain: HOST,
      target_group_id: groupId,
      tls_mode: 'none',
      aliases: [`down${i}.${HOST}`],
    })
    expect(r.json.reconcile.status).toBe('pending')
  }
  await sleep(5_000)
  const restarted = cs.restart()
  // From the local API's first answer (the agent takes seconds more) to the deferred change held by the proxy.
  await eventually(
    () => freshRequest(`${cs.url}/health`, { timeoutMs: 500, headers: { 'user-agent': 'panel-bench/1.0' } }).catch(() => ({ status: 0 })),
    (r) => r.status === 200,
    30_000,
    10,
  )
  const back = Date.now()
  await eventually(
    async () => (await freshRequest(`${stack.caddy.adminUrl}/config/`)).body,
    (b) => b.includes(`down4.${HOST}`),
    30_000,
    10,
  )
  info('local API answers again to the deferred push held by the proxy', Date.now() - back)
  await restarted
  await sleep(3_000)
  await p.stop()
  const down = leakWindows(p.answers(), [])
  info('engine down and back: banned requests answered 200', down.leaks, 'count')
  info(`engine down and back: probes sent (${down.resets} reset)`, down.answers, 'count')

  reportFigures('edge-push', figures)
})
