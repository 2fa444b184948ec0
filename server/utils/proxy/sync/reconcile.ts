import { getConfig } from '../../core/config'
import { getDb, isDryRun, runWrite, writeTransaction, type Executor, type Tx } from '../../core/db'
import { proxyRejected } from '../../core/errors'
import { writeAudit, systemActor, type AuditContext } from '../../core/audit'
import { logger } from '../../core/log'
import { redactSecrets } from '../../core/redact'
import { readRuntimeState, writeRuntimeState } from '../../core/runtime-state'
import { fetchBannedSources, probeEngine } from '../../security/lapi'
import { KNOWN_BANS_MAX_SOURCES, lastKnownBannedSources, rememberBannedSources } from '../../security/known-bans'
import { mirrorBannedSources, mirrorEnabled, syncMirrorNow } from '../../security/mirror'
import { hostUsesBouncer } from '../build/crowdsec'
import type { Json, ProxySnapshot } from '../build/types'
import { buildProxyConfig, hashOfConfigText, hashProxyConfig, stableStringify } from '../build/index'
import { readHeldConfig } from '../nodes/held-hash'
import { healNodes, nodeConfigHashOfText, noteCanaryHeld, rememberPushed, rollOut } from '../nodes/rollout'
import { readProxySnapshot } from '../snapshot'

// Database -> pure builder -> POST /load, inside the mutation's transaction:
// a rejection rolls the change back (502 with the proxy's text, secrets
// redacted); an unreachable proxy keeps the change as "pending" and the loop
// below retries it. Every push runs in the write queue, one at a time.
//
// Engine-down rule: every /load restarts the bouncer with an EMPTY decision
// store, filled by its first pull from the local API. While that API is down
// the new bouncer lets every banned source through (A1, edge-build §7). So a
// push that would start the bouncer waits for the engine: the change stays
// committed, the answer is "pending", and the loop pushes once it answers.
// With the engine up, the new bouncer still needs its first pull (0-60 ms
// measured, more under load): the pushed configuration carries, for 15 s, a
// route refusing the sources banned at push time (build/crowdsec.ts).

const _LOOP_ACTOR = systemActor('reconciler')
/** Short: the probe runs inside the mutation's transaction, before its push. */
const _ENGINE_PROBE_TIMEOUT_MS = 1_000
/** How long the sources banned at push time are refused by the warm-up route (covers one retry of the bouncer's first pull, 10 s). */
export const BOUNCER_WARMUP_MS = 15_000
/** Beyond this the list would make the configuration too large to push on every change. */
const BOUNCER_WARMUP_MAX_SOURCES = KNOWN_BANS_MAX_SOURCES
export const ENGINE_DEFERRED_REASON = 'security engine unreachable: push deferred so the proxy keeps enforcing the decisions it holds'

export interface ReconcileState {
  last_reconcile_at: string | null
  last_reconcile_status: 'ok' | 'pending' | 'never'
  last_error: string | null
  pushed_hash: string | null
  pushed_at: string | null
  warnings: string[]
}
/** `deferred`: pending because the security engine is unreachable (the proxy was not contacted). */
export type ReconcileOutcome = { status: 'applied' | 'pending'; error?: string; warnings: string[]; deferred?: boolean }

const _STATE_KEY = 'proxy.reconcile'
const _EMPTY: ReconcileState = {
  last_reconcile_at: null,
  last_reconcile_status: 'never',
  last_error: null,
  pushed_hash: null,
  pushed_at: null,
  warnings: [],
}

/** The last attempt, including rejections (which roll back and so leave no row). */
let _lastAttempt: { at: string; status: 'ok' | 'pending' | 'rejected'; error: string | null } | undefined
let _retryRequested = false
/** The pending push waits for the engine, not for the proxy. */
let _deferredForEngine = false
/** What the proxy was last given: the configuration for an unreachable engine (known bans, 503 hosts). */
let _pushedEngineDown = false
/** The last push has hosts that refuse everything while the engine is unreachable. */
let _pushedFailClosed = false

export async function readReconcileState(exec: Executor = getDb()): Promise<ReconcileState> {
  return (await readRuntimeState<ReconcileState>(_STATE_KEY, exec)) ?? _EMPTY
}

/** Whether the configuration runs the bouncer: loading it (re)starts it with an empty store. */
export function configStartsBouncer(config: Json): boolean {
  const apps = (config as { apps?: Record<string, unknown> }).apps
  return !!apps && 'crowdsec' in apps
}

/** The proxy holds this configuration (warm-up routes aside): a push would change nothing but restart the bouncer. */
const _CANARY_SLOT = 'canary'
async function _proxyHolds(hash: string): Promise<boolean> {
  const held = await readHeldConfig(_CANARY_SLOT, getConfig().proxy.adminUrl, { timeoutMs: 2_000 }, hashProxyConfig)
  return held.ok && held.hash === hash
}

/**
 * The sources to refuse while the new bouncer loads (buildBouncerWarmupRoute).
 * Without them the push still goes ahead, with a warning: the engine answers
 * (it was just probed), so the window is the bouncer's first pull.
 */
async function _warmupGate(warnings: string[], redact: (text: string) => Promise<string>): Promise<ProxySnapshot['bouncerWarmup']> {
  try {
    // With the mirror: a delta pull now (its own key), then its sources; without: a read with the proxy's key.
    let sources: string[]
    if (mirrorEnabled()) {
      await syncMirrorNow()
      sources = mirrorBannedSources()!.sources
    } else {
      sources = await fetchBannedSources({ timeoutMs: 2_000 })
      rememberBannedSources(sources)
    }
    if (sources.length <= BOUNCER_WARMUP_MAX_SOURCES) return { untilMs: Date.now() + BOUNCER_WARMUP_MS, sources }
    warnings.push(
      `bouncer warm-up list not set: ${sources.length} banned sources exceed ${BOUNCER_WARMUP_MAX_SOURCES}; banned sources may pass until the new bouncer has loaded its decisions`,
    )
  } catch (err) {
    warnings.push(
      await redact(
        `bouncer warm-up list not set (${(err as Error).message}); banned sources may pass until the new bouncer has loaded its decisions`,
      ),
    )
  }
  return null
}

// Revisions (issue 17): told of every push that changed what the proxy holds, inside the transaction.
type _PushedHook = (tx: Tx, ctx: AuditContext, pushed: { reason: string; hash: string; json: string }) => Promise<void>
const _pushedHooks: _PushedHook[] = []
export function onConfigPushed(hook: _PushedHook): void {
  _pushedHooks.push(hook)
}

/** Builds from the transaction's view of the database and pushes; see the module comment. */
export async function reconcileInTransaction(
  tx: Tx,
  ctx: AuditContext,
  reason: string,
  opts: { force?: boolean } = {},
): Promise<ReconcileOutcome> {
  // A dry run (?dry_run=1) never reaches the proxy: the before-commit hook describes and rolls back.
  if (isDryRun()) return { status: 'applied', warnings: [] }
  const snapshot = await readProxySnapshot(tx)
  const { config, warnings } = buildProxyConfig(snapshot)
  let built = config
  let json = stableStringify(config)
  // Built without a warm-up route (that one is built into pushedJson below): the text is what hashProxyConfig hashes.
  let hash = hashOfConfigText(json)
  /** With the bouncer warm-up route; revisions keep `json` (the same hash, without the passing ban list). */
  let pushedJson: string | undefined
  let engineDown = false
  const failClosed = snapshot.hosts.some((h) => h.enabled && h.engine_down_refuse && hostUsesBouncer(snapshot, h))
  const now = new Date().toISOString()
  const previous = await readReconcileState(tx)
  // Through the transaction: a credential being saved is only visible there.
  const redact = (text: string) => redactSecrets(text, { exec: tx, extra: [snapshot.security.bouncerKey] })

  if (configStartsBouncer(config)) {
    // Every push restarts the bouncer: none when the proxy already holds this state. With the
    // engine unreachable, hosts that fail closed need the other configuration even so.
    const engine = await probeEngine({ timeoutMs: _ENGINE_PROBE_TIMEOUT_MS })
    const known = engine.up ? null : lastKnownBannedSources()
    // The configuration for an unreachable engine is pushed when some host must then refuse,
    // or when the proxy already runs it (its bouncer's store is gone already). Otherwise the
    // proxy's bouncer still holds every ban it pulled, newer ones included: the push waits.
    const degradedPush = !engine.up && !!known && (failClosed || _pushedEngineDown)
    if (!degradedPush && !opts.force && (await _proxyHolds(hash)))
      return _recordApplied(tx, ctx, reason, { hash, json, previous, warnings, now, hosts: snapshot.hosts.length, failClosed })
    if (degradedPush && known) {
      // The configuration for an unreachable engine: the bans last known refused by the proxy
      // itself (the new bouncer starts empty and cannot pull), hosts that fail closed answer 503.
      engineDown = true
      const degraded = buildProxyConfig({ ...snapshot, engineDown: { knownBanned: known.sources } }).config
      built = degraded
      json = stableStringify(degraded)
      hash = hashOfConfigText(json)
      warnings.push(
        await redact(
          `security engine unreachable (${engine.error}): the proxy refuses the ${known.sources.length} bans last read at ${known.at}${failClosed ? ', and hosts that fail closed answer 503' : ''}, until it answers again`,
        ),
      )
      if (!opts.force && (await _proxyHolds(hash)))
        return _recordApplied(tx, ctx, reason, {
          hash,
          json,
          previous,
          warnings,
          now,
          hosts: snapshot.hosts.length,
          engineDown,
          failClosed,
        })
    } else if (!engine.up) {
      const error = await redact(`${ENGINE_DEFERRED_REASON} (${engine.error})`)
      const repeat = previous.last_reconcile_status === 'pending' && previous.last_error === error
      _lastAttempt = { at: now, status: 'pending', error }
      _retryRequested = true
      _deferredForEngine = true
      if (!repeat) {
        await writeRuntimeState(tx, _STATE_KEY, {
          ...previous,
          last_reconcile_at: now,
          last_reconcile_status: 'pending',
          last_error: error,
          warnings,
        } satisfies ReconcileState)
        logger.warn(`proxy push deferred (${reason}): ${error}`)
      }
      // The loop's own retries while the engine stays down change nothing and record nothing.
      if (!repeat || ctx.actor !== _LOOP_ACTOR.actor)
        await writeAudit(ctx, 'proxy_push_deferred', { reason, config_hash: hash.slice(0, 16), why: 'security engine unreachable' }, tx)
      return { status: 'pending', error, warnings, deferred: true }
    }
    if (!engineDown) {
      const bouncerWarmup = await _warmupGate(warnings, redact)
      if (bouncerWarmup) pushedJson = stableStringify(buildProxyConfig({ ...snapshot, bouncerWarmup }).config)
    }
  }

  // force: files behind the config changed (a re-uploaded certificate) while the JSON did not.
  // Node by node, the canary (PROXY_ADMIN_URL) first: with it alone, the single push of before.
  // The warm-up route does not count in the node hash: the one of `json` is the one of what is pushed.
  const roll = await rollOut(tx, pushedJson ?? json, { force: opts.force, nodeHash: nodeConfigHashOfText(built, json) })
  const result = roll.result
  warnings.push(...roll.warnings)
  if (result.outcome === 'rejected') {
    const proxyError = await redact(result.proxyError)
    _lastAttempt = { at: now, status: 'rejected', error: proxyError }
    logger.warn(`proxy rejected the configuration (${reason}): ${proxyError}`)
    throw proxyRejected(proxyError)
  }
  _deferredForEngine = false
  if (result.outcome === 'unreachable') {
    const error = await redact(result.error)
    _lastAttempt = { at: now, status: 'pending', error }
    _retryRequested = true
    await writeRuntimeState(tx, _STATE_KEY, {
      ...previous,
      last_reconcile_at: now,
      last_reconcile_status: 'pending',
      last_error: error,
      warnings,
    } satisfies ReconcileState)
    return { status: 'pending', error, warnings }
  }
  return _recordApplied(tx, ctx, reason, {
    hash,
    json,
    previous,
    warnings,
    now,
    hosts: snapshot.hosts.length,
    force: opts.force,
    engineDown,
    failClosed,
    nodeHash: roll.nodeHash,
  })
}

async function _recordApplied(
  tx: Tx,
  ctx: AuditContext,
  reason: string,
  o: {
    hash: string
    json: string
    previous: ReconcileState
    warnings: string[]
    now: string
    hosts: number
    force?: boolean
    engineDown?: boolean
    failClosed?: boolean
    /** The roll-out's nodeConfigHash of what it pushed (none when nothing was pushed). */
    nodeHash?: string
  },
): Promise<ReconcileOutcome> {
  _deferredForEngine = false
  _pushedEngineDown = !!o.engineDown
  _pushedFailClosed = !!o.failClosed
  _lastAttempt = { at: o.now, status: 'ok', error: null }
  // What the other nodes are healed to (rollout.ts), once this state is committed.
  rememberPushed(o.hash, o.json, o.nodeHash)
  await writeRuntimeState(tx, _STATE_KEY, {
    last_reconcile_at: o.now,
    last_reconcile_status: 'ok',
    last_error: null,
    pushed_hash: o.hash,
    pushed_at: o.now,
    warnings: o.warnings,
  } satisfies ReconcileState)
  if (o.previous.pushed_hash !== o.hash || o.force)
    await writeAudit(ctx, 'proxy_reconcile', { reason, config_hash: o.hash.slice(0, 16), hosts: o.hosts, warnings: o.warnings }, tx)
  if (o.previous.pushed_hash !== o.hash) for (const hook of _pushedHooks) await hook(tx, ctx, { reason, hash: o.hash, json: o.json })
  return { status: 'applied', warnings: o.warnings }
}

/** A reconcile of its own (boot, restore): the newest database state is pushed. */
export function reconcileNow(reason: string): Promise<ReconcileOutcome> {
  return writeTransaction((tx) => reconcileInTransaction(tx, _LOOP_ACTOR, reason))
}

export function lastReconcileAttempt() {
  return _lastAttempt
}

export type TickResult = 'pushed' | 'pending' | 'deferred' | 'in-sync' | 'unreachable' | 'rejected'

/** Whether a push is due, against the committed state; `reason` when it is. */
async function _pushDue(): Promise<{ reason: string } | { result: TickResult }> {
  const state = await readReconcileState()
  if (_retryRequested || state.last_reconcile_status !== 'ok') {
    // Waiting for the engine: nothing to do (and nothing to record) until it answers.
    if (_deferredForEngine && !(await probeEngine({ timeoutMs: _ENGINE_PROBE_TIMEOUT_MS })).up) return { result: 'deferred' }
    return { reason: _deferredForEngine ? 'the security engine answers again: pushing the deferred change' : 'retry of a pending change' }
  }
  const held = await readHeldConfig(_CANARY_SLOT, getConfig().proxy.adminUrl, { timeoutMs: 2_000 }, hashProxyConfig)
  const heldHash = held.ok ? held.hash : null
  noteCanaryHeld(held)
  if (!held.ok) return { result: 'unreachable' }
  if (heldHash === null || heldHash !== state.pushed_hash) return { reason: 'the proxy holds another configuration (restarted?)' }
  // The engine's state decides between the two configurations: back to normal once it
  // answers; to the unreachable-engine one when it stops, if some host must then refuse.
  if (_pushedEngineDown || _pushedFailClosed) {
    const up = (await probeEngine({ timeoutMs: _ENGINE_PROBE_TIMEOUT_MS })).up
    if (_pushedEngineDown && up) return { reason: 'the security engine answers again' }
    if (!_pushedEngineDown && !up) return { reason: 'the security engine is unreachable: hosts that fail closed refuse' }
  }
  return { result: 'in-sync' }
}

/**
 * One compare-and-push of the loop: retries a pending push, and re-pushes when
 * the proxy holds something other than what was last pushed (it restarted, or
 * someone loaded another configuration). Pushes nothing when nothing changed.
 *
 * The first look runs outside the write queue (cheap, usually "in sync"); a
 * push is only decided by a second look inside it. There no mutation is in
 * flight, so the committed hash is the one the proxy should hold: a mutation's
 * push that the proxy already holds while its transaction has not committed yet
 * can no longer be mistaken for drift and pushed a second time.
 */
export async function reconcileTick(): Promise<TickResult> {
  const result = await _tickCanary()
  // The other nodes follow the canary: each one that holds another configuration gets the current one.
  if (result === 'in-sync' || result === 'pushed') {
    try {
      await healNodes(async (exec) => (await readReconcileState(exec)).pushed_hash)
    } catch (err) {
      logger.warn(`healing proxy nodes failed: ${(err as Error).message}`)
    }
  }
  return result
}

async function _tickCanary(): Promise<TickResult> {
  const first = await _pushDue()
  if ('result' in first) return first.result
  return runWrite(async () => {
    const due = await _pushDue()
    if ('result' in due) return due.result
    _retryRequested = false
    try {
      const outcome = await reconcileNow(due.reason)
      if (outcome.status === 'pending') return outcome.deferred ? 'deferred' : 'pending'
      logger.info(`pushed the proxy configuration: ${due.reason}`)
      return 'pushed'
    } catch (err) {
      logger.warn(`reconcile failed: ${(err as Error).message}`)
      return 'rejected'
    }
  })
}

/** The `reconcile` field every proxy-affecting mutation answers with. */
export function presentReconcile(o: ReconcileOutcome) {
  return { status: o.status, ...(o.error ? { error: o.error } : {}), ...(o.warnings.length ? { warnings: o.warnings } : {}) }
}
