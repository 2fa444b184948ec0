import { createSocket, type Socket as UdpSocket } from 'node:dgram'
import { createServer as createTcpServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import type { ProxySnapshot, TargetGroupSnapshot } from '../../server/utils/proxy/build/types'
import type { Stream } from '../../server/utils/streams/schemas'
import { freshRequest } from '../support/admin-http'
import { startCaddy, type CaddyHandle } from '../support/caddy'
import { buildGroupSnapshot, buildSnapshot } from '../support/factories'
import { createPublicClientNamespace, type PublicClientNamespace } from '../support/netns'
import { consecutiveFreePorts, freePorts, unusedPort } from '../support/ports'
import { makeTempDir, waitFor } from '../support/processes'
import { createGroup, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { buildStreamSnapshot } from '../support/stream-snapshot'

// Streams through the production Caddy (docs/streams.md): the builder's layer-4 app
// loaded into the real proxy, real TCP and UDP traffic from a client on a public
// address (198.51.100.10, in a network namespace) to echo upstreams on loopback.

const HOST_ADDRESS = '198.51.100.1'
const CLIENT = '198.51.100.10'
/** The second client address: the one trusted to send a PROXY protocol header. */
const TRUSTED_CLIENT = '198.51.100.11'

// ---- upstreams: what the proxy dials -------------------------------------------------

interface EchoUpstream {
  port: number
  /** The PROXY protocol header each connection began with (null: none), in arrival order. */
  headers: Array<ProxyHeader | null>
  close(): Promise<void>
}

interface ProxyHeader {
  version: 1 | 2
  source: string
  sourcePort: number
}

/** A PROXY protocol header at the start of `buf`: the header and its length; 'more' when it may still be arriving. */
function parseProxyHeader(buf: Buffer): { header: ProxyHeader | null; length: number } | 'more' {
  const v2sig = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a])
  if (buf.length < 16) return v2sig.subarray(0, buf.length).equals(buf) || 'PROXY '.startsWith(buf.toString('latin1')) ? 'more' : none()
  if (buf.subarray(0, 12).equals(v2sig)) {
    const length = 16 + buf.readUInt16BE(14)
    if (buf.length < length) return 'more'
    // 0x11: TCP over IPv4, 0x12: UDP over IPv4 (the addresses this test uses).
    if (buf[13] !== 0x11 && buf[13] !== 0x12) throw new Error(`unexpected PROXY v2 family ${buf[13]}`)
    const source = [...buf.subarray(16, 20)].join('.')
    return { header: { version: 2, source, sourcePort: buf.readUInt16BE(24) }, length }
  }
  if (buf.toString('latin1', 0, 6) === 'PROXY ') {
    const end = buf.indexOf('\r\n')
    if (end < 0) return 'more'
    const [, , source, , sourcePort] = buf.toString('latin1', 0, end).split(' ')
    return { header: { version: 1, source: source!, sourcePort: Number(sourcePort) }, length: end + 2 }
  }
  return none()
  function none() {
    return { header: null, length: 0 }
  }
}

/**
 * A TCP upstream that answers each line with `<its port>:<line>` (so a test sees which
 * port the proxy dialled), after reading the PROXY protocol header a connection may
 * begin with.
 */
async function startTcpEcho(port: number): Promise<EchoUpstream> {
  const headers: Array<ProxyHeader | null> = []
  const sockets = new Set<Socket>()
  const server: Server = createTcpServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let buf = Buffer.alloc(0)
    let headerRead = false
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk])
      if (!headerRead) {
        const parsed = parseProxyHeader(buf)
        if (parsed === 'more') return
        headers.push(parsed.header)
        buf = buf.subarray(parsed.length)
        headerRead = true
      }
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        socket.write(`${port}:${buf.toString('utf8', 0, nl)}\n`)
        buf = buf.subarray(nl + 1)
      }
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  return {
    port,
    headers,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

/** A UDP upstream that answers each datagram with `<its port>:<datagram>`. */
async function startUdpEcho(port: number): Promise<EchoUpstream> {
  const headers: Array<ProxyHeader | null> = []
  const socket: UdpSocket = createSocket('udp4')
  socket.on('message', (msg, from) => {
    const parsed = parseProxyHeader(msg)
    const { header, length } = parsed === 'more' ? { header: null, length: 0 } : parsed
    headers.push(header)
    socket.send(`${port}:${msg.subarray(length).toString('utf8')}`, from.port, from.address)
  })
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject)
    socket.bind(port, '127.0.0.1', () => resolve())
  })
  return { port, headers, close: () => new Promise<void>((resolve) => socket.close(() => resolve())) }
}

// ---- the client in the namespace -----------------------------------------------------

interface ClientResult {
  /** What came back before the connection ended. */
  out: string
  /** Why it ended early: a socket error code (ECONNREFUSED...), 'closed' or 'timeout'; absent when the answer came. */
  error?: string
}

// The clients run inside the namespace as small Node scripts; each prints one JSON line.
// Their timeouts only bound a failing run: a passing one never waits for them.
const TCP_CLIENT = `
const net = require('node:net')
const [host, port, localAddress, payload] = process.argv.slice(1)
let out = ''
const done = (r) => { console.log(JSON.stringify({ out, ...r })); process.exit(0) }
const s = net.connect({ host, port: Number(port), localAddress })
s.setTimeout(10000, () => done({ error: 'timeout' }))
s.on('connect', () => s.write(Buffer.from(payload, 'base64')))
s.on('data', (d) => { out += d; if (out.endsWith('\\n')) done({}) })
s.on('error', (e) => done({ error: e.code || String(e) }))
s.on('close', () => done({ error: 'closed' }))
`
const UDP_CLIENT = `
const dgram = require('node:dgram')
const [host, port, localAddress, payload] = process.argv.slice(1)
const s = dgram.createSocket('udp4')
const done = (r) => { console.log(JSON.stringify(r)); process.exit(0) }
s.on('message', (m) => done({ out: m.toString() }))
s.on('error', (e) => done({ out: '', error: e.code || String(e) }))
setTimeout(() => done({ out: '', error: 'timeout' }), 10000)
s.bind(0, localAddress, () => s.send(Buffer.from(payload, 'base64'), Number(port), host))
`

let ns: PublicClientNamespace

async function fromNamespace(
  protocol: 'tcp' | 'udp',
  port: number,
  payload: string | Buffer,
  from: string = CLIENT,
): Promise<ClientResult> {
  const data = Buffer.from(payload).toString('base64')
  const r = await ns.exec(process.execPath, ['-e', protocol === 'tcp' ? TCP_CLIENT : UDP_CLIENT, HOST_ADDRESS, String(port), from, data])
  const line = r.stdout.trim().split('\n').at(-1) ?? ''
  if (!line.startsWith('{')) throw new Error(`the namespace client printed nothing (exit ${r.code}): ${r.stderr}`)
  return JSON.parse(line)
}

// ---- the proxy -----------------------------------------------------------------------

let caddy: CaddyHandle
let httpPort: number
let httpsPort: number
const upstreams: EchoUpstream[] = []
const taken: number[] = []

/** Takes `n` consecutive free ports and remembers them, so two runs of this file's ports never overlap. */
async function portRun(n: number): Promise<number> {
  const base = await consecutiveFreePorts(n, taken)
  taken.push(...Array.from({ length: n }, (_, i) => base + i))
  return base
}

const group = (id: number, targets: string[], overrides: Partial<TargetGroupSnapshot> = {}) =>
  buildGroupSnapshot({ id, name: `group-${id}`, targets: targets.map((address) => ({ address, weight: 1 })), ...overrides })

/** Builds the configuration of these streams the way the reconciler does and loads it into the real Caddy. */
async function load(streams: Stream[], targetGroups: TargetGroupSnapshot[], overrides: Partial<ProxySnapshot> = {}) {
  const snapshot = buildSnapshot({
    adminListen: caddy.adminListen,
    storageRoot: caddy.storageDir,
    logDir: makeTempDir('stream-logs-'),
    // The HTTP listener on loopback and on the namespace's side: streams listen where it does.
    httpListen: [`127.0.0.1:${httpPort}`, `${HOST_ADDRESS}:${httpPort}`],
    httpsListen: [`127.0.0.1:${httpsPort}`],
    httpPort,
    httpsPort,
    hosts: [],
    targetGroups,
    streams,
    ...overrides,
  })
  const { config, warnings } = buildProxyConfig(snapshot)
  const res = await caddy.load(config)
  expect(res, res.body).toMatchObject({ status: 200 })
  return warnings
}

beforeAll(async () => {
  ns = await createPublicClientNamespace({ hostAddress: HOST_ADDRESS, clientAddresses: [CLIENT, TRUSTED_CLIENT] })
  caddy = await startCaddy()
  ;[httpPort, httpsPort] = await freePorts(2)
  taken.push(httpPort, httpsPort)
})
afterAll(async () => {
  await caddy?.stop()
  await ns?.destroy()
  for (const u of upstreams) await u.close()
})

async function tcpEcho(port: number) {
  const u = await startTcpEcho(port)
  upstreams.push(u)
  return u
}
async function udpEcho(port: number) {
  const u = await startUdpEcho(port)
  upstreams.push(u)
  return u
}

describe('streams through the production Caddy, from a client on a public address', () => {
  it('a TCP stream on one port reaches its echo upstream', async () => {
    const up = await tcpEcho(await portRun(1))
    const listen = await portRun(1)
    await load([buildStreamSnapshot({ id: 1, listen_port: listen, target_group_id: 1 })], [group(1, [`127.0.0.1:${up.port}`])])
    expect(await fromNamespace('tcp', listen, 'hello\n')).toEqual({ out: `${up.port}:hello\n` })
    expect(up.headers.at(-1)).toBeNull()
  })

  it('a one_to_one range of 3 ports sends each port to its own upstream port', async () => {
    const target = await portRun(3)
    const ups = [await tcpEcho(target), await tcpEcho(target + 1), await tcpEcho(target + 2)]
    const listen = await portRun(3)
    await load(
      [buildStreamSnapshot({ id: 2, listen_port: listen, listen_port_end: listen + 2, range_mapping: 'one_to_one', target_group_id: 2 })],
      [group(2, [`127.0.0.1:${target}`])],
    )
    for (let i = 0; i < 3; i++)
      expect(await fromNamespace('tcp', listen + i, `port ${i}\n`)).toEqual({ out: `${ups[i]!.port}:port ${i}\n` })
  })

  it('an all_to_one range of 3 ports sends every port to the one upstream port', async () => {
    const up = await tcpEcho(await portRun(1))
    const listen = await portRun(3)
    await load(
      [buildStreamSnapshot({ id: 3, listen_port: listen, listen_port_end: listen + 2, range_mapping: 'all_to_one', target_group_id: 3 })],
      [group(3, [`127.0.0.1:${up.port}`])],
    )
    for (let i = 0; i < 3; i++) expect(await fromNamespace('tcp', listen + i, `port ${i}\n`)).toEqual({ out: `${up.port}:port ${i}\n` })
  })

  it('a UDP stream answers a datagram through its echo upstream', async () => {
    const up = await udpEcho(await portRun(1))
    const listen = await portRun(1)
    await load(
      [buildStreamSnapshot({ id: 4, protocol: 'udp', listen_port: listen, target_group_id: 4 })],
      [group(4, [`127.0.0.1:${up.port}`])],
    )
    expect(await fromNamespace('udp', listen, 'ping')).toEqual({ out: `${up.port}:ping` })
  })

  it('PROXY protocol v2 toward the upstream names the namespace client, on TCP and on UDP', async () => {
    const tcpUp = await tcpEcho(await portRun(1))
    const udpUp = await udpEcho(await portRun(1))
    const [tcpListen, udpListen] = [await portRun(1), await portRun(1)]
    await load(
      [
        buildStreamSnapshot({ id: 5, listen_port: tcpListen, proxy_protocol: 'v2', target_group_id: 5 }),
        buildStreamSnapshot({ id: 6, name: 'dns', protocol: 'udp', listen_port: udpListen, proxy_protocol: 'v2', target_group_id: 6 }),
      ],
      [group(5, [`127.0.0.1:${tcpUp.port}`]), group(6, [`127.0.0.1:${udpUp.port}`])],
    )
    expect(await fromNamespace('tcp', tcpListen, 'who am i\n')).toEqual({ out: `${tcpUp.port}:who am i\n` })
    expect(tcpUp.headers.at(-1)).toMatchObject({ version: 2, source: CLIENT })
    expect(await fromNamespace('udp', udpListen, 'who am i')).toEqual({ out: `${udpUp.port}:who am i` })
    expect(udpUp.headers.at(-1)).toMatchObject({ version: 2, source: CLIENT })
  })

  it('PROXY protocol v1 toward the upstream names the namespace client', async () => {
    const up = await tcpEcho(await portRun(1))
    const listen = await portRun(1)
    await load(
      [buildStreamSnapshot({ id: 7, listen_port: listen, proxy_protocol: 'v1', target_group_id: 7 })],
      [group(7, [`127.0.0.1:${up.port}`])],
    )
    expect(await fromNamespace('tcp', listen, 'v1\n')).toEqual({ out: `${up.port}:v1\n` })
    expect(up.headers.at(-1)).toMatchObject({ version: 1, source: CLIENT })
  })

  it('a PROXY header is believed from a trusted proxy only; anyone else is judged by its own address', async () => {
    const up = await tcpEcho(await portRun(1))
    const listen = await portRun(1)
    await load(
      [buildStreamSnapshot({ id: 8, listen_port: listen, accept_proxy_protocol: true, proxy_protocol: 'v2', target_group_id: 8 })],
      [group(8, [`127.0.0.1:${up.port}`])],
      { clientIp: { trustedProxies: [TRUSTED_CLIENT], headers: ['X-Forwarded-For'] } },
    )
    const claimed = 'PROXY TCP4 10.20.30.40 198.51.100.1 40000 443\r\n'
    // The trusted proxy: the upstream's header names the client the incoming header named.
    expect(await fromNamespace('tcp', listen, `${claimed}relayed\n`, TRUSTED_CLIENT)).toEqual({ out: `${up.port}:relayed\n` })
    expect(up.headers.at(-1)).toMatchObject({ version: 2, source: '10.20.30.40', sourcePort: 40000 })
    // Any other source: its header is not read, so the upstream sees its real address and the header as data.
    expect(await fromNamespace('tcp', listen, claimed, CLIENT)).toEqual({ out: `${up.port}:${claimed}` })
    expect(up.headers.at(-1)).toMatchObject({ version: 2, source: CLIENT })
  })

  it('a disabled stream closes its port', async () => {
    const up = await tcpEcho(await portRun(1))
    const listen = await portRun(1)
    const stream = buildStreamSnapshot({ id: 9, listen_port: listen, target_group_id: 9 })
    const groups = [group(9, [`127.0.0.1:${up.port}`])]
    await load([stream], groups)
    expect(await fromNamespace('tcp', listen, 'on\n')).toEqual({ out: `${up.port}:on\n` })
    await load([{ ...stream, enabled: false }], groups)
    expect(await fromNamespace('tcp', listen, 'off\n')).toEqual({ out: '', error: 'ECONNREFUSED' })
  })

  it("round_robin alternates targets and weighted_round_robin follows the group's weights", async () => {
    const [a, b, c, d] = [
      await tcpEcho(await portRun(1)),
      await tcpEcho(await portRun(1)),
      await tcpEcho(await portRun(1)),
      await tcpEcho(await portRun(1)),
    ]
    const [rr, wrr] = [await portRun(1), await portRun(1)]
    await load(
      [
        buildStreamSnapshot({ id: 10, name: 'rr', listen_port: rr, target_group_id: 10 }),
        buildStreamSnapshot({ id: 11, name: 'wrr', listen_port: wrr, target_group_id: 11 }),
      ],
      [
        group(10, [`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`], { lb_policy: 'round_robin' }),
        group(11, [], {
          lb_policy: 'weighted_round_robin',
          targets: [
            { address: `127.0.0.1:${c.port}`, weight: 3 },
            { address: `127.0.0.1:${d.port}`, weight: 1 },
          ],
        }),
      ],
    )
    const answeredBy = async (port: number, n: number) => {
      const counts: Record<string, number> = {}
      for (let i = 0; i < n; i++) {
        const { out } = await fromNamespace('tcp', port, `${i}\n`)
        const by = out.split(':')[0]!
        counts[by] = (counts[by] ?? 0) + 1
      }
      return counts
    }
    expect(await answeredBy(rr, 4)).toEqual({ [a.port]: 2, [b.port]: 2 })
    expect(await answeredBy(wrr, 8)).toEqual({ [c.port]: 6, [d.port]: 2 })
  })

  it('a TCP target that refuses connections is passed over for the live one', async () => {
    const live = await tcpEcho(await portRun(1))
    // A port nothing listens on, and nothing will (below the ports handed out).
    const dead = await unusedPort()
    const listen = await portRun(1)
    await load(
      [buildStreamSnapshot({ id: 12, name: 'failover', listen_port: listen, target_group_id: 12 })],
      [
        // No health check: the retry alone must carry each connection to the live target.
        group(12, [`127.0.0.1:${dead}`, `127.0.0.1:${live.port}`], { lb_policy: 'round_robin' }),
      ],
    )
    for (let i = 0; i < 4; i++) expect(await fromNamespace('tcp', listen, `try ${i}\n`)).toEqual({ out: `${live.port}:try ${i}\n` })
  })

  it("the TCP health check connects to each target at the group's interval and marks the refusing one down", async () => {
    const live = await tcpEcho(await portRun(1))
    const dead = await portRun(1)
    const listen = await portRun(1)
    await load(
      [buildStreamSnapshot({ id: 13, name: 'checked', listen_port: listen, target_group_id: 13 })],
      [
        group(13, [`127.0.0.1:${dead}`, `127.0.0.1:${live.port}`], {
          health_check: { path: '/', interval_seconds: 1, expect_status: 200 },
        }),
      ],
    )
    // The proxy's own verdict, per upstream, on its admin API's metrics.
    const gauge = (metrics: string, port: number) =>
      new RegExp(`caddy_layer4_proxy_upstream_healthy\\{upstream="tcp/127\\.0\\.0\\.1:${port}"\\} (\\d)`).exec(metrics)?.[1]
    let metrics = ''
    await waitFor(
      async () => {
        metrics = (await freshRequest(`${caddy.adminUrl}/metrics`)).body
        return gauge(metrics, dead) === '0' && gauge(metrics, live.port) === '1'
      },
      { timeoutMs: 30_000, what: 'the health check verdicts on /metrics', logFile: caddy.logFile },
    )
    expect([gauge(metrics, dead), gauge(metrics, live.port)]).toEqual(['0', '1'])
  })

  it('every balancing policy and a TCP health check load into the real Caddy', async () => {
    const listen = await portRun(6)
    const policies = ['round_robin', 'least_conn', 'random', 'first', 'ip_hash', 'weighted_round_robin'] as const
    const warnings = await load(
      policies.map((_, i) => buildStreamSnapshot({ id: 20 + i, name: `p${i}`, listen_port: listen + i, target_group_id: 20 + i })),
      policies.map((lb_policy, i) =>
        group(20 + i, ['127.0.0.1:1', '127.0.0.1:2'], {
          lb_policy,
          health_check: { path: '/healthz', interval_seconds: 30, expect_status: 200 },
        }),
      ),
    )
    expect(warnings).toEqual([])
    const active = (await caddy.getConfig()) as any
    expect(Object.keys(active.apps.layer4.servers)).toHaveLength(6)
  })
})

describe('a stream created through the API', () => {
  let stack: ProxyStack
  beforeAll(async () => {
    stack = await startProxyStack({ httpListenExtra: [HOST_ADDRESS] })
  })
  afterAll(async () => {
    await stack?.stop()
  })

  it('carries traffic from the namespace client once the API answers 201', async () => {
    const up = await tcpEcho(await portRun(1))
    const listen = await portRun(1)
    const g = await createGroup(stack, { name: 'echo', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const res = await stack.panel.request('/api/streams', {
      method: 'POST',
      cookie: stack.admin,
      body: { name: 'echo', protocol: 'tcp', listen_port: listen, target_group_id: g.id, proxy_protocol: 'v2' },
    })
    expect(res.status, res.text).toBe(201)
    expect(await fromNamespace('tcp', listen, 'via api\n')).toEqual({ out: `${up.port}:via api\n` })
    expect(up.headers.at(-1)).toMatchObject({ version: 2, source: CLIENT })
  })
})
