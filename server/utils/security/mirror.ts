import { getConfig } from '../core/config'
import { logger } from '../core/log'
import { redactSecrets } from '../core/redact'
import { startLoop, type Loop } from '../core/background'
import { isRefusedSource, pullDecisionStream, type LapiDecision } from './lapi'
import { parseGoDurationMs } from '../core/validate'
import { LOOPS } from '../core/job-names'

// The panel's own copy of the engine's active decisions, fed by the local API's
// decision stream with the panel's bouncer key (LAPI_PANEL_BOUNCER_KEY): a full
// pull at start and after any failed pull (the engine may have lost or gained
// anything meanwhile), deltas every LAPI_PANEL_PULL_SECONDS, a full one every
// hour as well (a decision committed after a pull began but created before it
// would otherwise be missed until then). The list, its filters and pages, and
// the bans last known all read it; no read goes with the proxy's key.
// Held in memory: one panel process per engine (design.md); a second replica
// keeps its own copy with the same key's deltas split between them, so a
// replica needs a key of its own.

const _FULL_RESYNC_MS = 3_600_000
const _STARTUP_TIMEOUT_MS = 120_000
const _DELTA_TIMEOUT_MS = 30_000

export interface MirrorRecord {
  id: number
  origin: string
  type: string
  scope: string
  value: string
  scenario: string
  /** Absolute expiry (ms), from the time left the engine reported when the decision arrived. */
  untilMs: number
  /** Lower-cased value and scenario, for q without a lower-casing per row per request. */
  valueLc: string
  scenarioLc: string
}

let _byId = new Map<number, MirrorRecord>()
/** Every record, ascending id: pages walk it from the top. */
let _sorted: MirrorRecord[] = []
let _version = 0
let _needFull = true
let _state = {
  synced_at: null as number | null,
  full_sync_at: null as number | null,
  full_syncs: 0,
  last_error: null as string | null,
  last_error_at: null as number | null,
}
let _inFlight: Promise<void> | undefined

export function mirrorEnabled(): boolean {
  return !!getConfig().lapi.panelBouncerKey
}

// Origins, types, scopes and scenarios repeat across hundreds of thousands of records:
// one string each (JSON.parse makes a new one per decision). Emptied at each full pull.
let _strings = new Map<string, string>()
function _shared(s: string): string {
  let held = _strings.get(s)
  if (held === undefined) {
    held = s
    _strings.set(s, s)
  }
  return held
}

function _record(d: LapiDecision, receivedMs: number): MirrorRecord {
  const left = parseGoDurationMs(String(d.duration)) ?? 0
  const value = String(d.value)
  const scenario = _shared(String(d.scenario))
  return {
    id: Number(d.id),
    origin: _shared(String(d.origin)),
    type: _shared(String(d.type)),
    scope: _shared(String(d.scope)),
    value,
    scenario,
    untilMs: receivedMs + left,
    valueLc: value.toLowerCase(),
    scenarioLc: _shared(scenario.toLowerCase()),
  }
}

function _installFull(byId: Map<number, MirrorRecord>): void {
  _byId = byId
  _sorted = [...byId.values()].sort((a, b) => a.id - b.id)
}

function _applyDelta(added: LapiDecision[], deleted: LapiDecision[], receivedMs: number): boolean {
  let dropped = false
  for (const d of deleted) if (_byId.delete(Number(d.id))) dropped = true
  const fresh = new Map<number, MirrorRecord>()
  for (const d of added) {
    const r = _record(d, receivedMs)
    if (_byId.has(r.id)) dropped = true // the held object leaves the order below, the new one joins it
    _byId.set(r.id, r)
    fresh.set(r.id, r)
  }
  if (!dropped && !fresh.size) return false
  // One O(n) pass per pull, never a splice per decision (a country revocation expires thousands).
  const kept = dropped ? _sorted.filter((r) => _byId.get(r.id) === r && !fresh.has(r.id)) : _sorted
  const incoming = [...fresh.values()].sort((x, y) => x.id - y.id)
  // New ids are nearly always above every held one (the engine's ids grow): append, else merge.
  _sorted = !incoming.length
    ? kept
    : !kept.length || incoming[0]!.id > kept[kept.length - 1]!.id
      ? kept.concat(incoming)
      : _merge(kept, incoming)
  return true
}

function _merge(a: MirrorRecord[], b: MirrorRecord[]): MirrorRecord[] {
  const out: MirrorRecord[] = new Array(a.length + b.length)
  let i = 0,
    j = 0,
    k = 0
  while (i < a.length && j < b.length) out[k++] = a[i]!.id < b[j]!.id ? a[i++]! : b[j++]!
  while (i < a.length) out[k++] = a[i++]!
  while (j < b.length) out[k++] = b[j++]!
  return out
}

async function _pull(): Promise<void> {
  const full = _needFull || (_state.full_sync_at !== null && Date.now() - _state.full_sync_at > _FULL_RESYNC_MS)
  try {
    const timeoutMs = full ? _STARTUP_TIMEOUT_MS : _DELTA_TIMEOUT_MS
    // A full pull becomes records as it is read (the answer is never held whole); the
    // records replace the held ones only once the answer was read to its end.
    const receivedMs = Date.now()
    if (full) _strings = new Map()
    const fullById = new Map<number, MirrorRecord>()
    const added: LapiDecision[] = []
    const deleted: LapiDecision[] = []
    await pullDecisionStream(
      full,
      (kind, d) => {
        if (full) {
          if (kind === 'new') fullById.set(Number(d.id), _record(d, receivedMs))
        } else (kind === 'new' ? added : deleted).push(d)
      },
      { timeoutMs },
    )
    const now = Date.now()
    if (full) {
      _installFull(fullById)
      _version++
      _state = { ..._state, full_sync_at: now, full_syncs: _state.full_syncs + 1 }
      logger.info(`decision mirror: full pull, ${_sorted.length} active decisions`)
    } else if (_applyDelta(added, deleted, now)) _version++
    if (_state.last_error) logger.info('decision mirror: the local API answers again')
    _needFull = false
    _state = { ..._state, synced_at: now, last_error: null, last_error_at: null }
  } catch (err) {
    // After a failed pull the next one is a full pull: resynchronised on reconnect.
    _needFull = true
    const error = await redactSecrets((err as Error).message)
    if (_state.last_error !== error) logger.warn(`decision mirror: pull failed: ${error}`)
    _state = { ..._state, last_error: error, last_error_at: Date.now() }
    throw err
  }
}

/** One pull now (single flight: a caller during a pull waits for the next one, which sees its change). */
export async function syncMirrorNow(): Promise<void> {
  while (_inFlight) await _inFlight.catch(() => {})
  _inFlight = _pull().finally(() => {
    _inFlight = undefined
  })
  return _inFlight
}

/**
 * The mirror as of its last pull, waiting for the first one (or pulling now when
 * none ever succeeded); throws the pull's error when it has never been filled.
 */
export async function mirrorSnapshot(): Promise<{ records: MirrorRecord[]; syncedAt: number; version: number }> {
  if (_state.synced_at === null) await syncMirrorNow()
  return { records: _sorted, syncedAt: _state.synced_at!, version: _version }
}

let _sourcesCache: { version: number; sources: string[]; at: string } | undefined

/** The sources the proxy's bouncer refuses, from the mirror (undefined before its first pull). */
export function mirrorBannedSources(): { sources: string[]; at: string } | undefined {
  if (_state.synced_at === null) return undefined
  const at = new Date(_state.synced_at).toISOString()
  if (_sourcesCache?.version !== _version) {
    const now = Date.now(),
      set = new Set<string>()
    for (const r of _sorted) if (r.untilMs >= now && isRefusedSource(r)) set.add(r.value)
    _sourcesCache = { version: _version, sources: [...set].sort(), at }
  }
  return { sources: _sourcesCache.sources, at }
}

export function mirrorHealth() {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
  return {
    enabled: mirrorEnabled(),
    pull_seconds: getConfig().lapi.pullSeconds,
    decisions: _sorted.length,
    banned_sources: mirrorBannedSources()?.sources.length ?? null,
    synced_at: iso(_state.synced_at),
    full_sync_at: iso(_state.full_sync_at),
    full_syncs: _state.full_syncs,
    last_error: _state.last_error,
    last_error_at: iso(_state.last_error_at),
  }
}

/** Undefined without the panel's own bouncer key (no mirror). */
export function startDecisionMirror(): Loop | undefined {
  if (!mirrorEnabled()) return undefined
  return startLoop(LOOPS.securityDecisionMirror, {
    run: syncMirrorNow,
    // Start to start: a ban waits at most one interval plus one pull, not an interval after the pull ends.
    nextDelayMs: ({ durationMs }) => Math.max(0, getConfig().lapi.pullSeconds * 1000 - durationMs),
    onFailure: () => {
      /* logged in _pull; retried at the next tick */
    },
  })
}
