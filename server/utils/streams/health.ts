import { createSocket } from 'node:dgram'
import { connect } from 'node:net'
import { streams, targetGroups } from '../../../db/schema'
import { getConfig } from '../core/config'
import { getDb } from '../core/db'
import { readLayer4UpstreamHealth } from '../proxy/nodes/client'
import { proxyReachable } from '../proxy/sync/state'

// Live health of each stream's upstreams (GET /api/streams/health, docs/streams.md "Health").
//
// TCP (when the target group has a health check, the stream's opt-in as for web hosts): the
// proxy's own verdict first. The builder gives each TCP stream caddy-l4's active check, which
// connects to each target at the group's interval from the proxy's network and sets the gauge
// caddy_layer4_proxy_upstream_healthy on the admin API's /metrics at every check. The panel also
// connects itself, for the cause in words ("connect: connection refused") and as the answer
// while the proxy has no verdict yet (no check run, admin API down). UDP: caddy-l4 cannot check
// it (a UDP "dial" always succeeds), so the panel sends the stream's probe datagram
// (`udp_probe_hex`) and waits for any answer; the panel must reach the target for that.
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

/** The proxy's verdict and the panel's own probe, as one answer (see the top of this file). */
async function _tcpHealth(host: string, port: number, proxy: Map<string, boolean> | null): Promise<_Probe> {
  const own = await probeTcp(host, port)
  const verdict = proxy?.get(`tcp/${host.includes(':') ? `[${host}]` : host}:${port}`)
  if (verdict === undefined) return own
  if (verdict) return { state: 'healthy', cause: null }
  return {
    state: 'unhealthy',
    cause:
      own.state === 'unhealthy'
        ? own.cause
        : "the proxy's health check cannot connect (the panel can: something between the proxy and the target?)",
  }
}

async function _probeAll(): Promise<StreamHealth[]> {
  const db = getDb()
  const [streamRows, groupRows, proxy] = await Promise.all([
    db.select().from(streams).orderBy(streams.id),
    db.select({ id: targetGroups.id, targets: targetGroups.targets, healthCheck: targetGroups.healthCheck }).from(targetGroups),
    proxyReachable() === false ? null : readLayer4UpstreamHealth(getConfig().proxy.adminUrl, { timeoutMs: 1_500 }),
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
          return _remember(key, await _tcpHealth(hp.host, hp.port, proxy), address, nowMs)
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
