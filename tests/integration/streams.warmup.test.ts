import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startLineEchoUpstream, type LineEchoUpstream } from '../support/upstream'
import { freshRequest } from '../support/admin-http'
import { postDecisions, type CrowdsecHandle } from '../support/crowdsec'
import { EDGE_HOST_ADDRESS, startEdgeStack, type EdgeStack } from '../support/edge-stack'
import { eventually } from '../support/http'
import { freePorts } from '../support/ports'
import { makeTempDir, startProcess } from '../support/processes'
import { createGroup, createHost, type ProxyStack } from '../support/proxy-stack'

// The bouncer warm-up of a stream (docs/streams.md, "Fail modes") through the
// production Caddy, driven by the panel, with the real security engine. Every push
// restarts the bouncer with an empty store; until its first pull, only the
// configuration can refuse a banned source. A source banned in the engine, connecting
// all the time from the public-client namespace, must never reach the upstream across
// a run of pushes, and the refusal must end with its window.

const BANNED = '198.51.100.200',
  /** Banned after a push (so not on its warm-up list): once it passes again, the bouncer has pulled the unbans. */
  SENTINEL = '198.51.100.210'
const HOST = 'warm.example.test'
const PROBE_LINE = 'from-the-banned-source'

let edge: EdgeStack
let cs: CrowdsecHandle
let stack: ProxyStack
let up: LineEchoUpstream
let streamPort = 0,
  streamId = 0,
  hostId = 0,
  groupId = 0

// One connection from `localAddress` inside the namespace: one line sent, one JSON line printed.
// Its timeout only bounds a failing run: a passing one never waits for it.
const TCP_CLIENT = `
const net = require('node:net')
const [host, port, localAddress, line] = process.argv.slice(1)
let out = ''
const done = (r) => { console.log(JSON.stringify({ out, ...r })); process.exit(0) }
const s = net.connect({ host, port: Number(port), localAddress })
s.setTimeout(10000, () => done({ error: 'timeout' }))
s.on('connect', () => s.write(line + '\\n'))
s.on('data', (d) => { out += d; if (out.endsWith('\\n')) done({}) })
s.on('error', (e) => done({ error: e.code || String(e) }))
s.on('close', () => done({ error: 'closed' }))
`
interface Outcome {
  out: string
  error?: string
}
/** Closed by the proxy with nothing said: a FIN, or a reset when the client's line was still unread. */
const wasRefused = (o: Outcome) => o.out === '' && (o.error === 'closed' || o.error === 'ECONNRESET')
const passed = (o: Outcome) => o.out.startsWith('echo:')

async function from(address: string, line = 'hello'): Promise<Outcome> {
  const r = await edge.ns.exec(process.execPath, ['-e', TCP_CLIENT, EDGE_HOST_ADDRESS, String(streamPort), address, line])
  const last = r.stdout.trim().split('\n').at(-1) ?? ''
  if (!last.startsWith('{')) throw new Error(`the namespace client printed nothing (exit ${r.code}): ${r.stderr}`)
  return JSON.parse(last)
}

// The same client in a loop, two at a time, one line per outcome ("<sentAt> passed|closed|ECONNRESET|..."):
// a new connection every few milliseconds, in one process of its own.
const TCP_PROBER = `
const net = require('node:net')
const [host, port, localAddress, line] = process.argv.slice(1)
let stopping = false
process.on('SIGTERM', () => { stopping = true; setTimeout(() => process.exit(0), 200) })
function once() {
  if (stopping) return
  const sentAt = Date.now()
  let out = '', ended = false
  const s = net.connect({ host, port: Number(port), localAddress })
  const end = (what) => {
    if (ended) return
    ended = true
    s.destroy()
    process.stdout.write(sentAt + ' ' + what + '\\n')
    setTimeout(once, 5)
  }
  s.setTimeout(5000, () => end('timeout'))
  s.on('connect', () => s.write(line + '\\n'))
  s.on('data', (d) => { out += d; if (out.endsWith('\\n')) end('passed') })
  s.on('error', (e) => end(e.code || 'error'))
  s.on('close', () => end('closed'))
}
once(); once()
`
function startProber(address: string) {
  const logFile = join(makeTempDir('stream-prober-'), 'outcomes.log')
  const proc = startProcess(
    'ip',
    ['netns', 'exec', edge.ns.name, process.execPath, '-e', TCP_PROBER, EDGE_HOST_ADDRESS, String(streamPort), address, PROBE_LINE],
    {
      logFile,
    },
  )
  const outcomes = () => {
    let text = ''
    try {
      text = readFileSync(logFile, 'utf8')
    } catch {
      /* nothing yet */
    }
    return text
      .split('\n')
      .filter((l) => /^\d+ \S+$/.test(l))
      .map((l) => l.split(' ')[1]!)
  }
  return { outcomes, stop: () => proc.stop() }
}

const api = (path: string, method = 'GET', body?: unknown) => stack.panel.request(path, { method, cookie: stack.admin, body })
/** One host change = one new configuration pushed (and one bouncer restarted). */
async function changeHost(aliases: string[]) {
  const res = await api(`/api/hosts/${hostId}`, 'PUT', { domain: HOST, target_group_id: groupId, tls_mode: 'none', aliases })
  expect([res.status, res.json?.reconcile?.status], res.text).toEqual([200, 'applied'])
}
const heldConfigText = async () => (await freshRequest(`${stack.caddy.adminUrl}/config/`)).body
/** The warm-up route of the stream's server in the configuration the proxy holds, if any. */
async function heldWarmupRoute(): Promise<{ until: number; sources: string[] } | null> {
  const config = JSON.parse(await heldConfigText())
  const routes: any[] = config.apps?.layer4?.servers?.[`stream-${streamId}`]?.routes ?? []
  const route = routes.find((r) => r.match?.some((m: any) => 'panel_before' in m))
  if (!route) return null
  return { until: route.match[0].panel_before.until_unix_ms, sources: route.handle[0].routes[0].match[0].remote_ip.ranges }
}

beforeAll(async () => {
  edge = await startEdgeStack({ clientAddresses: [BANNED, SENTINEL], tickerSeconds: 1 })
  ;({ cs, stack } = edge)
  const [upPort, listen] = await freePorts(2)
  up = await startLineEchoUpstream(upPort!)
  streamPort = listen!
  const group = await createGroup(stack, { name: 'echo', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const res = await api('/api/streams', 'POST', { name: 'game', protocol: 'tcp', listen_port: streamPort, target_group_id: group.id })
  expect(res.status, res.text).toBe(201)
  streamId = res.json.id
  groupId = (await createGroup(stack, { name: 'web', targets: [{ address: `127.0.0.1:${edge.up.port}` }] })).id
  const host = await createHost(stack, { domain: HOST, target_group_id: groupId })
  expect(host.status, host.text).toBe(201)
  hostId = host.json.id
  await postDecisions(cs, [{ value: BANNED }])
})
afterAll(async () => {
  await edge?.stop()
  await up?.close()
})

describe('a source banned in the engine, on a stream, across pushes', () => {
  it('is refused on every connection through ten pushes in a row: not one reaches the upstream', async () => {
    expect(wasRefused(await eventually(() => from(BANNED), wasRefused, 20_000, 250))).toBe(true)
    const before = { connections: up.connections, received: up.received }
    const prober = startProber(BANNED)
    try {
      await eventually(
        async () => prober.outcomes().length,
        (n) => n >= 5,
        10_000,
        50,
      )
      for (let i = 0; i < 10; i++) await changeHost([`a${i}.${HOST}`])
    } finally {
      await prober.stop()
    }
    const outcomes = prober.outcomes()
    const counts: Record<string, number> = {}
    for (const o of outcomes) counts[o] = (counts[o] ?? 0) + 1
    console.log(`[streams.warmup] ${outcomes.length} connections from the banned source across 10 pushes: ${JSON.stringify(counts)}`)
    expect(outcomes.length).toBeGreaterThan(50)
    expect(outcomes.filter((o) => o === 'passed')).toEqual([])
    expect(up.received.slice(before.received.length)).not.toContain(PROBE_LINE)
    expect(up.connections).toBe(before.connections)
    // What held the line while each new bouncer loaded: the pushed configuration refuses the source itself.
    expect((await heldWarmupRoute())?.sources).toEqual([BANNED])
  })

  it('is refused by the warm-up route inside its window even once the bouncer lets it pass, and let through once the window is over', async () => {
    await changeHost(['window.' + HOST])
    const held = await heldWarmupRoute()
    expect(held?.sources).toEqual([BANNED])
    const config = await heldConfigText()
    // Banned after the push: not on the list, so only the bouncer refuses it.
    await postDecisions(cs, [{ value: SENTINEL }])
    expect(wasRefused(await eventually(() => from(SENTINEL), wasRefused, 20_000, 250))).toBe(true)
    for (const ip of [BANNED, SENTINEL]) expect((await api('/api/security/decisions/unban-ip', 'POST', { ip })).status).toBe(200)
    // The sentinel's unban came last: once it passes, the bouncer has pulled both and lets BANNED pass too.
    expect(passed(await eventually(() => from(SENTINEL), passed, 20_000, 250))).toBe(true)
    // The window (15 s from the push) is long enough to be inside it still; if not, the test cannot say anything.
    expect(Date.now()).toBeLessThan(held!.until)
    // No push since (the route is out of the configuration's hash, so the loop finds the proxy in sync).
    expect(await heldConfigText()).toBe(config)
    const before = { connections: up.connections, received: up.received }
    const refused = await from(BANNED, PROBE_LINE)
    expect(Date.now()).toBeLessThan(held!.until)
    expect(wasRefused(refused), JSON.stringify(refused)).toBe(true)
    expect({ connections: up.connections, received: up.received }).toEqual(before)
    // The route does not outlive its window: the same configuration, and the source passes once it is over.
    const back = await eventually(() => from(BANNED, 'after the window'), passed, 30_000, 250)
    expect(back.out).toBe('echo:after the window\n')
    expect(Date.now()).toBeGreaterThanOrEqual(held!.until)
    expect(await heldConfigText()).toBe(config)
  })
})
