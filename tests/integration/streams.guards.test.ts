import { readdirSync, readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startLineEchoUpstream, type LineEchoUpstream } from '../support/upstream'
import { decisionsFor, postDecisions, type CrowdsecHandle } from '../support/crowdsec'
import { EDGE_HOST_ADDRESS, startEdgeStack, type EdgeStack } from '../support/edge-stack'
import { eventually } from '../support/http'
import { afterLoopRuns } from '../support/loops'
import { freePorts } from '../support/ports'
import { createGroup, type ProxyStack } from '../support/proxy-stack'

// A stream's guards (docs/streams.md, "The chain of a connection") through the
// production Caddy, driven by the panel, with the real security engine: TCP
// connections from public-looking clients in a network namespace to a TCP echo
// upstream on loopback. A refused connection must end before any byte reaches the
// upstream, so the upstream counts every connection it is given.

const CLEAN = '198.51.100.60',
  BANNED = '198.51.100.200',
  WHITELISTED = '198.51.100.70',
  DENIED = '198.51.100.80',
  /** Banned in the same alert as WHITELISTED: once it is refused, the bouncer holds that alert's decisions. */
  SENTINEL = '198.51.100.210'

/** What a client got: the echoed line, or why the connection ended without one. */
interface Outcome {
  out: string
  /** 'closed', a socket error code (ECONNRESET...) or 'timeout'; absent when the answer came. */
  error?: string
}
const passed = (line: string): Outcome => ({ out: `echo:${line}\n` })
/** Closed by the proxy with nothing said: a FIN, or a reset when the client's line was still unread. */
const wasRefused = (o: Outcome) => o.out === '' && (o.error === 'closed' || o.error === 'ECONNRESET')

// The client inside the namespace: one connection from `localAddress`, one line, one JSON line printed.
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

let edge: EdgeStack
let cs: CrowdsecHandle
let stack: ProxyStack
let up: LineEchoUpstream
const ports = { open: 0, lan: 0, listed: 0, closed: 0 }
const streamIds: Record<keyof typeof ports, number> = { open: 0, lan: 0, listed: 0, closed: 0 }

async function from(address: string, port: number, line = 'hello'): Promise<Outcome> {
  const r = await edge.ns.exec(process.execPath, ['-e', TCP_CLIENT, EDGE_HOST_ADDRESS, String(port), address, line])
  const last = r.stdout.trim().split('\n').at(-1) ?? ''
  if (!last.startsWith('{')) throw new Error(`the namespace client printed nothing (exit ${r.code}): ${r.stderr}`)
  return JSON.parse(last)
}

/** The same client from this host, over loopback (a LAN source). */
function fromLoopback(port: number, line = 'hello'): Promise<Outcome> {
  return new Promise((resolve) => {
    let out = ''
    const s = connect({ host: '127.0.0.1', port })
    const done = (r: Partial<Outcome>) => {
      s.destroy()
      resolve({ out, ...r })
    }
    s.setTimeout(10_000, () => done({ error: 'timeout' }))
    s.on('connect', () => s.write(`${line}\n`))
    s.on('data', (d) => {
      out += d
      if (out.endsWith('\n')) done({})
    })
    s.on('error', (e: NodeJS.ErrnoException) => done({ error: e.code ?? String(e) }))
    s.on('close', () => done({ error: 'closed' }))
  })
}

/** One more refused connection: the client got nothing and the upstream saw neither a connection nor a byte. */
async function expectRefusedBeforeUpstream(address: string, port: number) {
  const before = { connections: up.connections, bytes: up.bytes }
  const o = await from(address, port, 'must not arrive')
  expect(wasRefused(o), JSON.stringify(o)).toBe(true)
  // The client's end came after the proxy ended the connection: anything proxied was counted by then.
  expect({ connections: up.connections, bytes: up.bytes }).toEqual(before)
}

/** The refusal lines Caddy logged: its default log (the process's output) and the files of its log folder. */
function refusals(): Array<{ stream_id: number; reason: string; remote: string; local: string; msg: string; level: string }> {
  const files = [stack.caddy.logFile, ...readdirSync(stack.logDir).map((f) => join(stack.logDir, f))]
  return files
    .flatMap((f) => readFileSync(f, 'utf8').split('\n'))
    .filter((l) => l.includes('"logger":"layer4.handlers.panel_refuse"'))
    .map((l) => JSON.parse(l))
}

const api = (path: string, method: string, body?: unknown) => stack.panel.request(path, { method, cookie: stack.admin, body })

beforeAll(async () => {
  edge = await startEdgeStack({
    clientAddresses: [CLEAN, BANNED, WHITELISTED, DENIED, SENTINEL],
    env: { PANEL_ENGINE_PROBE_SECONDS: '1' },
    tickerSeconds: 1,
  })
  ;({ cs, stack } = edge)
  const [upPort, ...listen] = await freePorts(5)
  up = await startLineEchoUpstream(upPort!)
  ;[ports.open, ports.lan, ports.listed, ports.closed] = listen as [number, number, number, number]
  const group = await createGroup(stack, { name: 'echo', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const list = await api('/api/access-lists', 'POST', {
    name: 'no-80',
    realm: 'unused at layer 4',
    default_action: 'allow',
    ip_rules: [{ action: 'deny', source: DENIED }],
    users: [],
  })
  expect(list.status, list.text).toBe(201)
  const streams = {
    open: {},
    lan: { lan_only: true, bouncer_enabled: false },
    listed: { access_list_id: list.json.id, bouncer_enabled: false },
    closed: { engine_down_refuse: true },
  }
  for (const [name, fields] of Object.entries(streams) as Array<[keyof typeof ports, object]>) {
    const res = await api('/api/streams', 'POST', {
      name,
      protocol: 'tcp',
      listen_port: ports[name],
      target_group_id: group.id,
      ...fields,
    })
    expect(res.status, res.text).toBe(201)
    streamIds[name] = res.json.id
  }
  await postDecisions(cs, [{ value: BANNED }])
})
afterAll(async () => {
  await edge?.stop()
  await up?.close()
})

describe('CrowdSec bans on a stream (layer4.matchers.crowdsec)', () => {
  it('a banned source is closed before any byte reaches the upstream; a clean one is served', async () => {
    const o = await eventually(() => from(BANNED, ports.open), wasRefused, 15_000, 250)
    expect(wasRefused(o), JSON.stringify(o)).toBe(true)
    await expectRefusedBeforeUpstream(BANNED, ports.open)
    expect(await from(CLEAN, ports.open, 'clean')).toEqual(passed('clean'))
  })

  it('unbanned through the panel, it is let through again', async () => {
    const res = await api('/api/security/decisions/unban-ip', 'POST', { ip: BANNED })
    expect(res.status, res.text).toBe(200)
    const o = await eventually(
      () => from(BANNED, ports.open, 'back'),
      (x) => x.out !== '',
      15_000,
      250,
    )
    expect(o).toEqual(passed('back'))
    // Banned again for what follows.
    await postDecisions(cs, [{ value: BANNED }])
    expect(wasRefused(await eventually(() => from(BANNED, ports.open), wasRefused, 15_000, 250))).toBe(true)
  })

  it('a whitelisted source is never judged by the bouncer, even when the engine bans it', async () => {
    const res = await api('/api/security/whitelist', 'POST', { value: WHITELISTED, reason: 'office' })
    expect(res.status, res.text).toBe(201)
    await postDecisions(cs, [{ value: WHITELISTED }, { value: SENTINEL }])
    // The sentinel refused: the bouncer has pulled that alert, the whitelisted source's ban included.
    expect(wasRefused(await eventually(() => from(SENTINEL, ports.open), wasRefused, 15_000, 250))).toBe(true)
    expect((await decisionsFor(cs, WHITELISTED)).length).toBe(1)
    expect(await from(WHITELISTED, ports.open, 'office')).toEqual(passed('office'))
  })
})

describe('LAN-only and access lists on a stream', () => {
  it('lan_only closes a public source before the upstream and serves loopback', async () => {
    await expectRefusedBeforeUpstream(CLEAN, ports.lan)
    expect(await fromLoopback(ports.lan, 'lan')).toEqual(passed('lan'))
  })

  it("the access list's deny rule closes its source; the others pass by its allow default", async () => {
    await expectRefusedBeforeUpstream(DENIED, ports.listed)
    expect(await from(CLEAN, ports.listed, 'listed')).toEqual(passed('listed'))
  })

  it('the LAN gate and the access list are not skipped by the whitelist (the bouncer alone is)', async () => {
    await expectRefusedBeforeUpstream(WHITELISTED, ports.lan)
  })

  it("each refusal is one line of Caddy's log with the stream, the reason and the client", async () => {
    const lines = refusals()
    for (const [stream, reason, remote] of [
      ['open', 'banned', BANNED],
      ['lan', 'lan_only', CLEAN],
      ['listed', 'access_list', DENIED],
    ] as const) {
      const line = lines.find((l) => l.stream_id === streamIds[stream] && l.reason === reason)
      expect(line, `${stream} ${reason}`).toMatchObject({ level: 'info', msg: 'connection refused' })
      expect(line!.remote).toMatch(new RegExp(`^${remote.replaceAll('.', '\\.')}:\\d+$`))
      expect(line!.local).toBe(`${EDGE_HOST_ADDRESS}:${ports[stream]}`)
    }
    // A served connection is not a refusal.
    expect(lines.some((l) => l.remote.startsWith(`${CLEAN}:`) && l.stream_id === streamIds.open)).toBe(false)
  })
})

describe('the engine stopped', () => {
  it('with engine_down_refuse every new connection is refused; without, the known ban is still refused and the rest pass', async () => {
    // The panel has read the bans: it reads them at every probe, and a whole probe ran since they showed.
    await afterLoopRuns(stack.panel, stack.admin, 'security:engine-probe')
    await cs.stop()
    // The stream that fails closed makes the reconciler push the engine-down configuration.
    const o = await eventually(() => from(CLEAN, ports.closed), wasRefused, 30_000, 250)
    expect(wasRefused(o), JSON.stringify(o)).toBe(true)
    await expectRefusedBeforeUpstream(CLEAN, ports.closed)
    await expectRefusedBeforeUpstream(WHITELISTED, ports.closed)
    // That push restarted the bouncer, which cannot pull: the known ban is refused by the configuration itself.
    expect(JSON.stringify(await stack.caddy.getConfig())).toContain(BANNED)
    await expectRefusedBeforeUpstream(BANNED, ports.open)
    expect(await from(CLEAN, ports.open, 'still open')).toEqual(passed('still open'))
    expect(await from(WHITELISTED, ports.open, 'still whitelisted')).toEqual(passed('still whitelisted'))
    expect(refusals().some((l) => l.stream_id === streamIds.closed && l.reason === 'engine_down')).toBe(true)
  })
})
