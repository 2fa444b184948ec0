import { createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { createPublicClientNamespace, type PublicClientNamespace } from '../support/netns'
import { freePort, unusedPort } from '../support/ports'
import { createGroup, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// The upstream of a connection row (docs/streams.md "Connection rows"): real connections
// from a client on a public address (198.51.100.10, in a network namespace) through the
// production Caddy; each `layer4` row names the target that carried its connection, also
// when several connections are open at once, after a refused target, and when none answers.

const HOST_ADDRESS = '198.51.100.1'
const CLIENT = '198.51.100.10'

/** A TCP upstream that answers each line with "<its port>:<line>", so the client sees which target it reached. */
async function startTcpEcho(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  let port = 0
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let buf = ''
    socket.on('data', (d) => {
      buf += d.toString('latin1')
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        socket.write(`${port}:${buf.slice(0, nl + 1)}`)
        buf = buf.slice(nl + 1)
      }
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  port = (server.address() as { port: number }).port
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

// Runs inside the namespace: opens N connections at once, sends a line on each, and hangs
// them all up only once every one has its answer (so they are all open together); prints one
// JSON line, each connection's local port and what it got. Its timeout only bounds a failing run.
const CONCURRENT_CLIENT = `
const net = require('node:net')
const [host, port, localAddress, n] = process.argv.slice(1)
const conns = []
let answered = 0, closed = 0
const done = (error) => { console.log(JSON.stringify({ conns: conns.map(({ port, out, error }) => ({ port, out, error })), error })); process.exit(0) }
setTimeout(() => done('timeout'), 15000)
for (let i = 0; i < Number(n); i++) {
  const c = { port: 0, out: '', error: undefined }
  conns.push(c)
  const s = net.connect({ host, port: Number(port), localAddress })
  c.socket = s
  s.on('connect', () => { c.port = s.localPort; s.write('hello ' + i + '\\n') })
  s.on('data', (d) => {
    c.out += d
    if (c.out.endsWith('\\n') && ++answered === conns.length) for (const x of conns) x.socket.end()
  })
  s.on('error', (e) => { c.error = e.code || String(e) })
  s.on('close', () => { if (++closed === conns.length) done() })
}
`

let stack: ProxyStack
let ns: PublicClientNamespace
const upstreams: Array<{ close(): Promise<void> }> = []

interface ClientConn {
  port: number
  out: string
  error?: string
}

async function connectAtOnce(listen: number, n: number): Promise<ClientConn[]> {
  const r = await ns.exec(process.execPath, ['-e', CONCURRENT_CLIENT, HOST_ADDRESS, String(listen), CLIENT, String(n)])
  const line = r.stdout.trim().split('\n').at(-1) ?? ''
  if (!line.startsWith('{')) throw new Error(`the namespace client printed nothing (exit ${r.code}): ${r.stderr}`)
  const result = JSON.parse(line) as { conns: ClientConn[]; error?: string }
  expect(result.error).toBeUndefined()
  return result.conns
}

async function createStream(body: Record<string, unknown>) {
  const res = await stack.panel.request('/api/streams', { method: 'POST', cookie: stack.admin, body })
  expect(res.status, res.text).toBe(201)
  return res.json
}

/** The stream's layer4 rows once `n` are ingested. */
async function rowsOf(streamId: number, n: number): Promise<any[]> {
  const rows = await eventually(
    async () =>
      ((await stack.panel.request('/api/logs?source=layer4&limit=500', { cookie: stack.admin })).json as any[]).filter(
        (r) => r.stream_id === streamId,
      ),
    (r) => r.length >= n,
    15_000,
    200,
  )
  expect(rows).toHaveLength(n)
  return rows
}

/** The client's port of a row: its line names the client as "ip:port" (`remote`); the row keeps the ip. */
const clientPortOf = (row: any) => Number(/"remote":"[^"]*:(\d+)"/.exec(row.raw)?.[1])

const answeredBy = (c: ClientConn) => `127.0.0.1:${c.out.split(':')[0]}`

beforeAll(async () => {
  ns = await createPublicClientNamespace({ hostAddress: HOST_ADDRESS, clientAddresses: [CLIENT] })
  stack = await startProxyStack({ httpListenExtra: [HOST_ADDRESS] })
})
afterAll(async () => {
  await stack?.stop()
  await ns?.destroy()
  for (const u of upstreams) await u.close()
})

describe('the upstream of a connection row', () => {
  it('round robin over two targets, six connections open at once: each row names the target that answered its connection', async () => {
    const [a, b] = [await startTcpEcho(), await startTcpEcho()]
    upstreams.push(a, b)
    const group = await createGroup(stack, {
      name: 'upstream-rr',
      lb_policy: 'round_robin',
      targets: [{ address: `127.0.0.1:${a.port}` }, { address: `127.0.0.1:${b.port}` }],
    })
    const listen = await freePort()
    const stream = await createStream({ name: 'upstream rr', protocol: 'tcp', listen_port: listen, target_group_id: group.id })
    const conns = await connectAtOnce(listen, 6)
    for (const c of conns) expect(c.out).toMatch(/^\d+:hello \d\n$/)
    // Round robin: three connections each.
    const byTarget = (list: string[]) => {
      const counts: Record<string, number> = {}
      for (const t of list) counts[t] = (counts[t] ?? 0) + 1
      return counts
    }
    expect(byTarget(conns.map(answeredBy))).toEqual({ [`127.0.0.1:${a.port}`]: 3, [`127.0.0.1:${b.port}`]: 3 })

    const rows = await rowsOf(stream.id, 6)
    const byClientPort = new Map(conns.map((c) => [c.port, answeredBy(c)]))
    for (const row of rows) {
      expect(row).toMatchObject({ remote_ip: CLIENT, message: 'closed' })
      expect(row.upstream).toBe(byClientPort.get(clientPortOf(row)))
    }
    expect(byTarget(rows.map((r) => r.upstream))).toEqual({ [`127.0.0.1:${a.port}`]: 3, [`127.0.0.1:${b.port}`]: 3 })
  })

  it('a refusing target, then a live one: the row names the live one, which carried the connection', async () => {
    const live = await startTcpEcho()
    upstreams.push(live)
    const dead = await unusedPort() // nothing listens there, and nothing will: the proxy's dial is refused
    const group = await createGroup(stack, {
      name: 'upstream-retry',
      lb_policy: 'round_robin',
      // No health check: only the retry takes each connection past the dead target. Round
      // robin alternates, so one of two connections dials the dead one first.
      targets: [{ address: `127.0.0.1:${dead}` }, { address: `127.0.0.1:${live.port}` }],
    })
    const listen = await freePort()
    const stream = await createStream({ name: 'upstream retry', protocol: 'tcp', listen_port: listen, target_group_id: group.id })
    for (let i = 0; i < 2; i++) {
      const [c] = await connectAtOnce(listen, 1)
      expect(c!.out).toBe(`${live.port}:hello 0\n`)
    }
    const rows = await rowsOf(stream.id, 2)
    for (const row of rows) expect(row).toMatchObject({ upstream: `127.0.0.1:${live.port}`, message: 'closed' })
  })

  it('no target answers: the row names the last one tried, and the reason is its refused dial', async () => {
    const [dead1, dead2] = [await freePort(), await freePort()]
    const group = await createGroup(stack, {
      name: 'upstream-none',
      lb_policy: 'round_robin',
      targets: [{ address: `127.0.0.1:${dead1}` }, { address: `127.0.0.1:${dead2}` }],
    })
    const listen = await freePort()
    const stream = await createStream({ name: 'upstream none', protocol: 'tcp', listen_port: listen, target_group_id: group.id })
    const [c] = await connectAtOnce(listen, 1)
    expect(c!.out).toBe('')
    const [row] = await rowsOf(stream.id, 1)
    expect([`127.0.0.1:${dead1}`, `127.0.0.1:${dead2}`]).toContain(row.upstream)
    // The reason is the proxy's last dial error, which names the same address.
    expect(row.message).toContain(`${row.upstream}: connect: connection refused`)
  })
})
