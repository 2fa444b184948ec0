import { readFileSync } from 'node:fs'
import { createSocket } from 'node:dgram'
import { createServer, type Server } from 'node:net'

function _listen(): Promise<{ srv: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => resolve({ srv, port: (srv.address() as { port: number }).port }))
  })
}

function _close(srv: Server): Promise<void> {
  return new Promise((resolve) => srv.close(() => resolve()))
}

/** A port free on 127.0.0.1 right now (bind 127.0.0.1:0, read the port, close). */
export async function freePort(): Promise<number> {
  const { srv, port } = await _listen()
  await _close(srv)
  return port
}

/** `n` distinct free ports (all held open until every one is known, so none repeats). */
export async function freePorts(n: number): Promise<number[]> {
  const held = []
  try {
    for (let i = 0; i < n; i++) held.push(await _listen())
    return held.map((h) => h.port)
  } finally {
    await Promise.all(held.map((h) => _close(h.srv)))
  }
}

/**
 * `n` consecutive ports free for TCP and UDP on every address (a range listener and the
 * one_to_one upstreams need runs of ports): candidates near free ones, each checked by binding.
 */
export async function consecutiveFreePorts(n: number, avoid: number[] = []): Promise<number> {
  const canBind = async (port: number) => {
    const tcp = createServer()
    const udp = createSocket('udp4')
    const tcpOk = await new Promise<boolean>((resolve) => {
      tcp.once('error', () => resolve(false))
      tcp.listen(port, '0.0.0.0', () => resolve(true))
    })
    const udpOk = await new Promise<boolean>((resolve) => {
      udp.once('error', () => resolve(false))
      udp.bind(port, '0.0.0.0', () => resolve(true))
    })
    if (tcpOk) await new Promise((resolve) => tcp.close(resolve))
    await new Promise<void>((resolve) => {
      try {
        udp.close(() => resolve())
      } catch {
        resolve()
      }
    })
    return tcpOk && udpOk
  }
  for (const base of await freePorts(20)) {
    if (base + n > 65535) continue
    const run = Array.from({ length: n }, (_, i) => base + i)
    if (run.some((p) => avoid.includes(p))) continue
    let ok = true
    for (const p of run) if (!(ok = await canBind(p))) break
    if (ok) return base
  }
  throw new Error(`no ${n} consecutive free ports found`)
}

/**
 * A loopback port where nothing listens, and where nothing will while the test counts on
 * it: one below the kernel's ephemeral range (net.ipv4.ip_local_port_range), where every
 * port of freePort() and of every outgoing connection comes from, so no component of this
 * test or of the other lane (docs/testing.md, "Two lanes") is handed it. Checked free now.
 */
export async function unusedPort(): Promise<number> {
  const [ephemeralLow] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number)
  const low = 20_000
  const high = Math.min(ephemeralLow ?? 32_768, 32_768)
  if (high - low < 100) throw new Error(`no room below the ephemeral ports (${ephemeralLow}) for a port nothing listens on`)
  for (let i = 0; i < 50; i++) {
    const port = low + Math.floor(Math.random() * (high - low))
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer()
      srv.once('error', () => resolve(false))
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)))
    })
    if (free) return port
  }
  throw new Error(`no free port found between ${low} and ${high}`)
}
