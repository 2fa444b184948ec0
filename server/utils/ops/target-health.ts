import { hosts, targetGroups } from '../../../db/schema'
import { getDb } from '../core/db'
import { getConfig } from '../core/config'
import { readProxyUpstreams } from '../proxy/nodes/client'
import { proxyReachable } from '../proxy/sync/state'
import type { LogRow } from '../logs/parse'

// Health of every target of every target group, from what the real proxy says:
//
// - the active health check: Caddy logs each failed check (logger
//   http.handlers.reverse_proxy.health_checker: "HTTP request failed" with the
//   dial error, "unexpected status code" with the status, ...) and "host is up"
//   when a target that was down passes again; a passing check is not logged.
//   Those lines reach the panel through the error log it ingests (logs/ingester.ts
//   calls noteProxyHealthRows on each group of lines);
// - the passive health check: GET /reverse_proxy/upstreams on the admin API gives
//   each upstream's failed proxied requests within fail_duration (30 s, see
//   proxy/build/load-balancer.ts). It never carries the active check's verdict.
//
// A target is unhealthy while its active check fails (the last failure is at most
// three intervals old and no "host is up" came after it; the expiry covers a
// reload, after which Caddy starts the target as healthy and logs nothing when it
// passes) or while the proxy counts failed requests to it. Healthy: the group
// has a health check and neither says otherwise. Unknown: no health check (the
// proxy then keeps no failure count either), or the proxy does not answer.
//
// The state is memory of this process (the panel that ingests the logs); after a
// restart a failing target is seen again at its next failed check.

export type TargetState = 'healthy' | 'unhealthy' | 'unknown'
export interface TargetHealth {
  address: string
  state: TargetState
  /** Why, in words: the check's error ("connect: connection refused"), "unexpected status code 500", failed requests. */
  cause: string | null
  /** When the current state began, when the panel saw it begin (ISO); null when not known. */
  since: string | null
  /** Failed active checks in a row (the current outage); 0 when healthy. */
  failed_checks: number
  /** Failed proxied requests the proxy counts now (passive check, last 30 s); null when the proxy did not answer. */
  failed_requests: number | null
}
export interface GroupHealth {
  state: TargetState
  targets: TargetHealth[]
}

/** Failed active checks older than this many intervals no longer make a target unhealthy (see above). */
const _STALE_INTERVALS = 3
const _STALE_SLACK_MS = 5_000
const _TOPOLOGY_MS = 2_000
const _UPSTREAMS_MS = 1_000
const _HEALTH_LOGGER = 'http.handlers.reverse_proxy.health_checker'
/** The checker's messages for a failed check (Caddy 2.6 to 2.11, healthchecks.go). */
const _FAILED_CHECK = /failed|unexpected|out of tolerances|expectations/i

interface _Observed {
  unhealthy: boolean
  cause: string | null
  sinceMs: number
  lastFailureMs: number
  failedChecks: number
}
const _observed = new Map<string, _Observed>()
const _passiveSinceMs = new Map<string, number>()

type _Group = { id: number; name: string; targets: Array<{ address: string }>; intervalSeconds: number | null }
type _Host = { id: number; domain: string; groupId: number | null }
const _topology = { atMs: 0, groups: [] as _Group[], hosts: [] as _Host[] }
const _upstreams = { atMs: 0, map: null as Map<string, { num_requests: number; fails: number }> | null }

async function _readTopology(force = false): Promise<typeof _topology> {
  if (!force && Date.now() - _topology.atMs < _TOPOLOGY_MS) return _topology
  const db = getDb()
  const [groups, hostRows] = await Promise.all([
    db
      .select({ id: targetGroups.id, name: targetGroups.name, targets: targetGroups.targets, hc: targetGroups.healthCheck })
      .from(targetGroups),
    db.select({ id: hosts.id, domain: hosts.domain, groupId: hosts.targetGroupId }).from(hosts),
  ])
  _topology.groups = groups.map((g) => ({ id: g.id, name: g.name, targets: g.targets, intervalSeconds: g.hc?.interval_seconds ?? null }))
  _topology.hosts = hostRows
  _topology.atMs = Date.now()
  return _topology
}

/** A group's or host's change: the next read sees it at once. */
export function forgetTargetTopology(): void {
  _topology.atMs = 0
}

async function _readUpstreams() {
  if (Date.now() - _upstreams.atMs < _UPSTREAMS_MS) return _upstreams.map
  // A proxy the reconciler already found unreachable is not asked again here: the lists would wait on it.
  _upstreams.map = proxyReachable() === false ? null : await readProxyUpstreams(getConfig().proxy.adminUrl, { timeoutMs: 1_500 })
  _upstreams.atMs = Date.now()
  return _upstreams.map
}

/** Pure: the check's error without Go's request and dial prefixes ("connect: connection refused"). */
export function describeCheckFailure(msg: string, error: unknown, statusCode: unknown): string {
  if (typeof statusCode === 'number') return msg.endsWith(' code') ? `${msg} ${statusCode}` : `${msg}: ${statusCode}`
  if (typeof error !== 'string' || !error) return msg
  const cause = error
    .replace(/^[A-Za-z]+ "[^"]*":\s*/, '')
    .replace(/^dial (?:tcp|udp)\S* \S+:\s*/, '')
    .trim()
  return (cause || msg).slice(0, 300)
}

/** Pure: one checker line's verdict, or null for a line that is not about a check's result. */
export function checkVerdict(e: Record<string, any>): { target: string; failed: boolean; cause: string | null } | null {
  // The active checker logs as http.handlers.reverse_proxy.health_checker.active.
  if (!String(e.logger ?? '').startsWith(_HEALTH_LOGGER) || typeof e.host !== 'string') return null
  const msg = String(e.msg ?? '')
  if (msg === 'host is up') return { target: e.host, failed: false, cause: null }
  if (!_FAILED_CHECK.test(msg)) return null
  return { target: e.host, failed: true, cause: describeCheckFailure(msg, e.error, e.status_code) }
}

function _isStale(o: _Observed, intervalSeconds: number | null, nowMs: number): boolean {
  const interval = (intervalSeconds ?? 30) * 1000
  return nowMs - o.lastFailureMs > _STALE_INTERVALS * interval + _STALE_SLACK_MS
}

function _groupsOf(topology: typeof _topology, target: string): _Group[] {
  return topology.groups.filter((g) => g.targets.some((t) => t.address === target))
}

/** "group web (hosts a.example, b.example)" for log rows. */
function _where(topology: typeof _topology, groups: _Group[]): { text: string; hostId: number | null } {
  const hostList = topology.hosts.filter((h) => groups.some((g) => g.id === h.groupId))
  const names = groups.map((g) => g.name).join(', ')
  const hostText = hostList.length ? `, used by ${hostList.map((h) => h.domain).join(', ')}` : ''
  return {
    text: groups.length ? ` of target group ${names}${hostText}` : '',
    hostId: hostList.length === 1 ? hostList[0]!.id : null,
  }
}

/**
 * The health checker's lines of a group of error-log rows update the targets' state;
 * returns the rows to store: a failed check only when it starts an outage or its cause
 * changes (Caddy logs one every interval while a target is down), at level warn and
 * naming the target, its group, its hosts and the cause; "host is up" as the recovery;
 * a request's "no upstreams available" names the host's unhealthy targets and why.
 */
export async function noteProxyHealthRows(rows: LogRow[], nowMs = Date.now()): Promise<LogRow[]> {
  if (!rows.some((r) => r.raw?.includes(_HEALTH_LOGGER) || r.message === 'no upstreams available')) return rows
  const topology = await _readTopology(true)
  const kept: LogRow[] = []
  for (const r of rows) {
    if (r.message === 'no upstreams available') {
      kept.push(_explainNoUpstream(r, topology, nowMs))
      continue
    }
    let e: Record<string, any> | null = null
    if (r.raw?.includes(_HEALTH_LOGGER))
      try {
        e = JSON.parse(r.raw)
      } catch {
        e = null
      }
    const v = e ? checkVerdict(e) : null
    if (!v) {
      kept.push(r)
      continue
    }
    const atMs = r.tsMs ?? nowMs
    const groups = _groupsOf(topology, v.target)
    const interval = groups.map((g) => g.intervalSeconds).find((s) => s !== null) ?? null
    const where = _where(topology, groups)
    const o = _observed.get(v.target)
    if (v.failed) {
      const ongoing = o?.unhealthy && !_isStale(o, interval, atMs)
      if (ongoing && o.cause === v.cause) {
        o.lastFailureMs = atMs
        o.failedChecks++
        continue // the same outage: folded into the row that started it
      }
      _observed.set(v.target, {
        unhealthy: true,
        cause: v.cause,
        sinceMs: ongoing ? o.sinceMs : atMs,
        lastFailureMs: atMs,
        failedChecks: ongoing ? o.failedChecks + 1 : 1,
      })
      kept.push({
        ...r,
        level: 'warn',
        hostId: r.hostId ?? where.hostId,
        message: `target ${v.target}${where.text} failed its health check: ${v.cause}`,
      })
    } else {
      _observed.set(v.target, {
        unhealthy: false,
        cause: null,
        sinceMs: atMs,
        lastFailureMs: o?.lastFailureMs ?? -Infinity,
        failedChecks: 0,
      })
      kept.push({ ...r, level: 'info', hostId: r.hostId ?? where.hostId, message: `target ${v.target}${where.text} is healthy again` })
    }
  }
  return kept
}

function _explainNoUpstream(r: LogRow, topology: typeof _topology, nowMs: number): LogRow {
  const host = topology.hosts.find((h) => h.id === r.hostId)
  const group = topology.groups.find((g) => g.id === host?.groupId)
  if (!group) return { ...r, level: 'warn' }
  const down = group.targets
    .map((t) => ({ address: t.address, o: _observed.get(t.address) }))
    .filter((t) => t.o?.unhealthy && !_isStale(t.o, group.intervalSeconds, nowMs))
  const why = down.length
    ? down.map((t) => `${t.address} is unhealthy (${t.o!.cause})`).join('; ')
    : `${group.targets.map((t) => t.address).join(', ')} refused or failed the request`
  return { ...r, level: 'warn', message: `no upstreams available: target group ${group.name}: ${why}` }
}

function _targetHealth(
  address: string,
  intervalSeconds: number | null,
  upstreams: Map<string, { fails: number }> | null,
  nowMs: number,
): TargetHealth {
  const o = _observed.get(address)
  const fails = upstreams ? (upstreams.get(address)?.fails ?? 0) : null
  if (fails) _passiveSinceMs.set(address, _passiveSinceMs.get(address) ?? nowMs)
  else if (fails === 0) _passiveSinceMs.delete(address)
  const base = { address, failed_requests: fails, failed_checks: 0 }
  if (intervalSeconds !== null && o?.unhealthy && !_isStale(o, intervalSeconds, nowMs))
    return { ...base, state: 'unhealthy', cause: o.cause, since: new Date(o.sinceMs).toISOString(), failed_checks: o.failedChecks }
  if (fails)
    return {
      ...base,
      state: 'unhealthy',
      cause: `${fails} proxied request${fails === 1 ? '' : 's'} failed in the last 30 s`,
      since: new Date(_passiveSinceMs.get(address)!).toISOString(),
    }
  if (intervalSeconds === null)
    return { ...base, state: 'unknown', cause: 'no health check: turn one on to have the proxy test this target', since: null }
  if (!upstreams) return { ...base, state: 'unknown', cause: "the proxy's admin API did not answer", since: null }
  const upSince = o && !o.unhealthy ? o.sinceMs : o ? o.lastFailureMs : null
  return {
    ...base,
    state: 'healthy',
    cause: null,
    since: upSince !== null && Number.isFinite(upSince) ? new Date(upSince).toISOString() : null,
  }
}

/** Unhealthy when a target is; healthy when all are; unknown otherwise. */
function _groupState(targets: TargetHealth[]): TargetState {
  if (targets.some((t) => t.state === 'unhealthy')) return 'unhealthy'
  return targets.length && targets.every((t) => t.state === 'healthy') ? 'healthy' : 'unknown'
}

/** Every group's health, by group id. */
export async function readTargetHealth(nowMs = Date.now()): Promise<Map<number, GroupHealth>> {
  // Read fresh: a group saved a moment ago is listed with its health.
  const [topology, upstreams] = await Promise.all([_readTopology(true), _readUpstreams()])
  const out = new Map<number, GroupHealth>()
  for (const g of topology.groups) {
    const targets = g.targets.map((t) => _targetHealth(t.address, g.intervalSeconds, upstreams, nowMs))
    out.set(g.id, { state: _groupState(targets), targets })
  }
  return out
}

/** For tests: forget every observation. */
export function resetTargetHealth(): void {
  _observed.clear()
  _passiveSinceMs.clear()
  _topology.atMs = 0
  _upstreams.atMs = 0
}
