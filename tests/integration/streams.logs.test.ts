import { createSocket, type Socket as UdpSocket } from 'node:dgram'
import { createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { createPublicClientNamespace, type PublicClientNamespace } from '../support/netns'
import { freePort } from '../support/ports'
import { createGroup, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// Visibility of streams (docs/streams.md "Connection rows" and "Health"): real connections
// from a client on a public address (198.51.100.10, in a network namespace) through the
// production Caddy become `layer4` rows the panel ingests from the proxy's log; the health
// answer follows a target going down and coming back.

const HOST_ADDRESS = '198.51.100.1'
const CLIENT = '198.51.100.10'

/** A TCP upstream that answers each line with "echo:<line>". */
async function startTcpEcho(port = 0): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let buf = ''
    socket.on('data', (d) => {
      buf += d.toString('latin1')
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        socket.write(`echo:${buf.slice(0, nl + 1)}`)
        buf = buf.slice(nl + 1)
      }
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  const bound = (server.address() as { port: number }).port
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

/** A UDP upstream that answers any datagram. */
async function startUdpEcho(): Promise<{ port: number; close(): Promise<void> }> {
  const socket: UdpSocket = createSocket('udp4')
  socket.on('message', (msg, from) => socket.send(msg, from.port, from.address))
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()))
  return { port: socket.address().port, close: () => new Promise<void>((resolve) => socket.close(() => resolve())) }
}

// The client runs inside the namespace; it prints one JSON line. Its timeout only bounds a failing run.
const TCP_CLIENT = `
const net = require('node:net')
const [host, port, localAddress, payload] = process.argv.slice(1)
let out = ''
const done = (r) => { console.log(JSON.stringify({ out, ...r })); process.exit(0) }
const s = net.connect({ host, port: Number(port), localAddress })
s.setTimeout(10000, () => done({ error: 'timeout' }))
s.on('connect', () => s.write(Buffer.from(payload, 'base64')))
s.on('data', (d) => { out += d; if (out.endsWith('\\n')) s.end() })
s.on('error', (e) => done({ error: e.code || String(e) }))
s.on('close', () => done(out.endsWith('\\n') ? {} : { error: 'closed' }))
`

let stack: ProxyStack
let ns: PublicClientNamespace
const upstreams: Array<{ close(): Promise<void> }> = []

async function fromNamespace(port: number, payload: string): Promise<{ out: string; error?: string }> {
  const r = await ns.exec(process.execPath, ['-e', TCP_CLIENT, HOST_ADDRESS, String(port), CLIENT, Buffer.from(payload).toString('base64')])
  const line = r.stdout.trim().split('\n').at(-1) ?? ''
  if (!line.startsWith('{')) throw new Error(`the namespace client printed nothing (exit ${r.code}): ${r.stderr}`)
  return JSON.parse(line)
}

async function createStream(body: Record<string, unknown>) {
  const res = await stack.panel.request('/api/streams', { method: 'POST', cookie: stack.admin, body })
  expect(res.status, res.text).toBe(201)
  return res.json
}

const layer4Rows = async (query = '') =>
  (await stack.panel.request(`/api/logs?source=layer4&limit=100${query}`, { cookie: stack.admin })).json as any[]

beforeAll(async () => {
  ns = await createPublicClientNamespace({ hostAddress: HOST_ADDRESS, clientAddresses: [CLIENT] })
  stack = await startProxyStack({ httpListenExtra: [HOST_ADDRESS] })
})
afterAll(async () => {
  await stack?.stop()
  await ns?.destroy()
  for (const u of upstreams) await u.close()
})

describe('connection rows', () => {
  it('a TCP connection carrying N bytes each way is one layer4 row: the stream, the client, the bytes, the close reason', async () => {
    const up = await startTcpEcho()
    upstreams.push(up)
    const group = await createGroup(stack, { name: 'echo-logs', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const listen = await freePort()
    const stream = await createStream({ name: 'echo logs', protocol: 'tcp', listen_port: listen, target_group_id: group.id })
    const payload = `${'x'.repeat(999)}\n` // 1,000 bytes toward the upstream
    const answer = await fromNamespace(listen, payload)
    expect(answer).toEqual({ out: `echo:${payload}` }) // 1,005 bytes back

    const rows = await eventually(
      () => layer4Rows(),
      (r) => r.some((x) => x.stream_id === stream.id),
      15_000,
      200,
    )
    const mine = rows.filter((x) => x.stream_id === stream.id)
    expect(mine).toHaveLength(1)
    expect(mine[0]).toMatchObject({
      source: 'layer4',
      stream_id: stream.id,
      stream: 'echo logs',
      remote_ip: CLIENT,
      bytes_in: 1000,
      bytes_out: 1005,
      level: 'info',
      message: 'closed',
    })
    expect(mine[0].duration).toBeGreaterThan(0)
    // Filterable like access rows: by client address, and counted by source in the stats.
    expect((await layer4Rows(`&remote_ip=${CLIENT}`)).some((x) => x.stream_id === stream.id)).toBe(true)
    const stats = (await stack.panel.request('/api/logs/stats?source=layer4', { cookie: stack.admin })).json
    expect(stats.by_source.layer4).toBeGreaterThanOrEqual(1)
    const security = (await stack.panel.request('/api/dashboard/security', { cookie: stack.admin })).json
    expect(security.connections_24h.total).toBeGreaterThanOrEqual(1)
  })

  it('a connection refused by the LAN gate is a warn row with the reason, and counted as refused', async () => {
    const up = await startTcpEcho()
    upstreams.push(up)
    const group = await createGroup(stack, { name: 'lan-only-logs', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const listen = await freePort()
    const stream = await createStream({ name: 'lan only', protocol: 'tcp', listen_port: listen, target_group_id: group.id, lan_only: true })
    const answer = await fromNamespace(listen, 'hello\n')
    expect(answer.out).toBe('')

    const rows = await eventually(
      () => layer4Rows(),
      (r) => r.some((x) => x.stream_id === stream.id),
      15_000,
      200,
    )
    const mine = rows.filter((x) => x.stream_id === stream.id)
    expect(mine).toHaveLength(1)
    expect(mine[0]).toMatchObject({ stream: 'lan only', remote_ip: CLIENT, level: 'warn', message: 'refused: lan_only', bytes_in: null })
    const security = (await stack.panel.request('/api/dashboard/security', { cookie: stack.admin })).json
    expect(security.connections_24h.refused).toBeGreaterThanOrEqual(1)
  })
})

describe('GET /api/streams/health', () => {
  const healthOf = async (id: number) => {
    const res = await stack.panel.request('/api/streams/health', { cookie: stack.admin })
    expect(res.status, res.text).toBe(200)
    return (res.json.streams as any[]).find((s) => s.stream_id === id)
  }

  it("a TCP target down is unhealthy with the cause (the proxy's check and the panel's agree); back up, healthy again", async () => {
    let up = await startTcpEcho()
    const port = up.port
    const group = await createGroup(stack, {
      name: 'health-tcp',
      targets: [{ address: `127.0.0.1:${port}` }],
      health_check: { path: '/', interval_seconds: 1, expect_status: 200 },
    })
    const stream = await createStream({ name: 'health tcp', protocol: 'tcp', listen_port: await freePort(), target_group_id: group.id })
    const first = await healthOf(stream.id)
    expect(first).toMatchObject({ name: 'health tcp', protocol: 'tcp', state: 'healthy' })
    expect(first.targets).toEqual([{ address: `127.0.0.1:${port}`, state: 'healthy', cause: null, since: expect.any(String) }])

    await up.close()
    // The proxy's active check runs every second: the answer turns at its next check.
    const down = await eventually(
      () => healthOf(stream.id),
      (h) => h.state === 'unhealthy',
      15_000,
      200,
    )
    expect(down.targets[0]).toMatchObject({ state: 'unhealthy', cause: 'connect: connection refused' })
    // Still down: the state began at the first answer that saw it.
    expect((await healthOf(stream.id)).targets[0].since).toBe(down.targets[0].since)

    up = await startTcpEcho(port)
    upstreams.push(up)
    const back = await eventually(
      () => healthOf(stream.id),
      (h) => h.state === 'healthy',
      15_000,
      200,
    )
    expect(back.targets[0]).toMatchObject({ state: 'healthy', cause: null })
  })

  it('UDP: healthy when the target answers the probe; without a probe, unknown with the reason', async () => {
    const up = await startUdpEcho()
    upstreams.push(up)
    const group = await createGroup(stack, { name: 'health-udp', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const probed = await createStream({
      name: 'udp probed',
      protocol: 'udp',
      listen_port: await freePort(),
      target_group_id: group.id,
      udp_probe_hex: '70696e67',
    })
    const silent = await createStream({ name: 'udp no probe', protocol: 'udp', listen_port: await freePort(), target_group_id: group.id })
    expect((await healthOf(probed.id)).targets[0]).toMatchObject({ state: 'healthy', cause: null })
    const none = await healthOf(silent.id)
    expect(none.state).toBe('unknown')
    expect(none.targets[0]).toMatchObject({ state: 'unknown', since: null })
    expect(none.targets[0].cause).toMatch(/udp_probe_hex/)
  })
})
