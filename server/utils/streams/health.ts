import { createSocket } from 'node:dgram'
import { connect } from 'node:net'
import { streams, targetGroups } from '../../../db/schema'
import { getDb } from '../core/db'

// Live health of each stream's upstreams (GET /api/streams/health, docs/streams.md "Health").
//
// The panel probes the targets itself, when asked: a TCP target is healthy when a connection to it
// opens (only when its target group has a health check, the stream's opt-in, like a web host's);
// a UDP target when it answers the stream's probe datagram (`udp_probe_hex`) with any datagram.
// Not caddy-l4's own active checker: it runs only where the builder turns it on, its verdict is
// not in the admin API, and it does not check UDP; a probe of the panel gives one answer for both.
// The panel must reach the targets the way the proxy does (same network); where it cannot, the
// answer says "unhealthy" with the dial error, which names the cause.
//
// `since` is when this panel first saw the current state (memory of the process); concurrent
// requests share one round of probes.

export type StreamTargetState = 'healthy' | 'unhealthy' | 'unknown'
export interface StreamTargetHealth {
  address: string
  state: StreamTargetState
  /** Why, in words: the dial error, "no answer to the probe within 3 s", or why nothing is checked. */
  cause: string | null
  /** When this panel first saw the current state (ISO); null for unknown. */
  since: string | null
}
export interface StreamHealth {
  stream_id: number
  name: string
  protocol: 'tcp' | 'udp'
  /** healthy: every checked target; unhealthy: none; unknown: nothing checked. Some down: 'degraded'. */
  state: StreamTargetState | 'degraded'
  targets: StreamTargetHealth[]
}

/** A probe waits at most this long: a target slower than this to accept or answer is unhealthy. */
export const STREAM_PROBE_TIMEOUT_MS = 3_000

const _since = new Map<string, { state: StreamTargetState; sinceMs: number }>()
let _inFlight: Promise<StreamHealth[]> | null = null

/** host:port of a target address (an IPv6 host in brackets); null when it has no port. */
export function splitTarget(address: string): { host: string; port: number } | null {
  const m = /^\[([^\]]+)\]:(\d{1,5})$/.exec(address) ?? /^([^:/\s]+):(\d{1,5})$/.exec(address)
  const port = m ? Number(m[2]) : 0
  return m && port >= 1 && port <= 65535 ? { host: m[1]!, port } : null
}

type _Probe = { state: 'healthy' | 'unhealthy'; cause: string | null }

/** Opens a TCP connection and closes it at once. */
export function probeTcp(host: string, port: number, timeoutMs = STREAM_PROBE_TIMEOUT_MS): Promise<_Probe> {
  return new Promise((resolve) => {
    const socket = connect({ host, port })
    const done = (p: _Probe) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(p)
    }
    const timer = setTimeout(() => done({ state: 'unhealthy', cause: `no connection within ${timeoutMs / 1000} s` }), timeoutMs)
    socket.once('connect', () => done({ state: 'healthy', cause: null }))
    socket.once('error', (e: NodeJS.ErrnoException) => done({ state: 'unhealthy', cause: `connect: ${_errText(e)}` }))
  })
}

/** Sends the probe datagram and waits for any answer (a closed port answers ICMP: "connection refused"). */
export function probeUdp(host: string, port: number, probe: Buffer, timeoutMs = STREAM_PROBE_TIMEOUT_MS): Promise<_Probe> {
  return new Promise((resolve) => {
    const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4')
    let settled = false
    const done = (p: _Probe) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.close()
      resolve(p)
    }
    const timer = setTimeout(() => done({ state: 'unhealthy', cause: `no answer to the probe within ${timeoutMs / 1000} s` }), timeoutMs)
    socket.once('message', () => done({ state: 'healthy', cause: null }))
    socket.once('error', (e: NodeJS.ErrnoException) => done({ state: 'unhealthy', cause: `probe: ${_errText(e)}` }))
    // A connected socket receives the ICMP port unreachable as an error, not a silence.
    socket.connect(port, host, () => socket.send(probe, (e) => e && done({ state: 'unhealthy', cause: `probe: ${_errText(e)}` })))
  })
}

function _errText(e: NodeJS.ErrnoException): string {
  const words: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    EHOSTUNREACH: 'host unreachable',
    ENETUNREACH: 'network unreachable',
    ENOTFOUND: 'name not found',
    EAI_AGAIN: 'name lookup failed',
    ETIMEDOUT: 'timed out',
  }
  return (e.code && words[e.code]) || e.message
}

function _remember(key: string, p: { state: StreamTargetState; cause: string | null }, address: string, nowMs: number): StreamTargetHealth {
  if (p.state === 'unknown') {
    _since.delete(key)
    return { address, state: 'unknown', cause: p.cause, since: null }
  }
  const seen = _since.get(key)
  const sinceMs = seen && seen.state === p.state ? seen.sinceMs : nowMs
  _since.set(key, { state: p.state, sinceMs })
  return { address, state: p.state, cause: p.cause, since: new Date(sinceMs).toISOString() }
}

async function _probeAll(): Promise<StreamHealth[]> {
  const db = getDb()
  const [streamRows, groupRows] = await Promise.all([
    db.select().from(streams).orderBy(streams.id),
    db.select({ id: targetGroups.id, targets: targetGroups.targets, healthCheck: targetGroups.healthCheck }).from(targetGroups),
  ])
  const groups = new Map(groupRows.map((g) => [g.id, g]))
  const nowMs = Date.now()
  return Promise.all(
    streamRows.map(async (s): Promise<StreamHealth> => {
      const group = groups.get(s.targetGroupId)
      const targets = await Promise.all(
        (group?.targets ?? []).map(async ({ address }) => {
          const key = `${s.id}|${address}`
          const unknown = (cause: string) => _remember(key, { state: 'unknown', cause }, address, nowMs)
          if (!s.enabled) return unknown('the stream is disabled')
          const hp = splitTarget(address)
          if (!hp) return unknown('the target has no port to check (host:port)')
          if (s.protocol === 'udp') {
            if (!s.udpProbeHex) return unknown('no UDP probe: set udp_probe_hex to the datagram the service answers')
            return _remember(key, await probeUdp(hp.host, hp.port, Buffer.from(s.udpProbeHex, 'hex')), address, nowMs)
          }
          if (!group?.healthCheck) return unknown('the target group has no health check')
          return _remember(key, await probeTcp(hp.host, hp.port), address, nowMs)
        }),
      )
      const checked = targets.filter((t) => t.state !== 'unknown')
      const up = checked.filter((t) => t.state === 'healthy').length
      const state = !checked.length ? 'unknown' : up === checked.length ? 'healthy' : up === 0 ? 'unhealthy' : 'degraded'
      return { stream_id: s.id, name: s.name, protocol: s.protocol, state, targets }
    }),
  )
}

/** Every stream with each target's state, probed now (concurrent callers share one round). */
export function streamsHealth(): Promise<StreamHealth[]> {
  _inFlight ??= _probeAll().finally(() => {
    _inFlight = null
  })
  return _inFlight
}
