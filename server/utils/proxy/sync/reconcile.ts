import { getConfig } from '../../core/config'
import { invalidateHostIdentityRules } from '../../auth/host-identity'
import { getDb, isDryRun, writeTransaction, type Executor, type Tx } from '../../core/db'
import { proxyRejected } from '../../core/errors'
import { writeAudit, systemActor, type AuditContext } from '../../core/audit'
import { logger } from '../../core/log'
import { redactSecrets } from '../../core/redact'
import { readRuntimeState, writeRuntimeState } from '../../core/runtime-state'
import { fetchBannedSources, probeEngine } from '../../security/lapi'
import { KNOWN_BANS_MAX_SOURCES, lastKnownBannedSources, rememberBannedSources } from '../../security/known-bans'
import { mirrorBannedSources, mirrorEnabled, syncMirrorNow } from '../../security/mirror'
import { hostUsesBouncer } from '../build/crowdsec'
import { streamFailsClosed } from '../build/stream-guards'
import type { Json, ProxySnapshot } from '../build/types'
import { buildProxyConfig, hashOfConfigText, hashProxyConfig, stableStringify } from '../build/index'
import { readHeldConfig, type HeldConfig } from '../nodes/held-hash'
import { nodeConfigHashOfText, rollOut } from '../nodes/rollout'
import { healthStatusWord, lastPushed, proxySync, reconcileStatusWord, syncFlags, type SyncOutcome } from './state'
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
//
// A push is three steps: the facts (the build, the engine's probe) go into a
// pure decision (decidePush), the roll-out carries it out (nodes/rollout.ts),
// and the recording writes its outcome: the runtime-state row, the audit row,
// the revision hook and the pipeline's state (state.ts).

export const LOOP_ACTOR = systemActor('reconciler')
/** Short: the probe runs inside the mutation's transaction, before its push. */
export const ENGINE_PROBE_TIMEOUT_MS = 1_000
/** How long the sources banned at push time are refused by the warm-up route (covers one retry of the bouncer's first pull, 10 s). */
export const BOUNCER_WARMUP_MS = 15_000
/** Beyond this the list would make the configuration too large to push on every change. */
const BOUNCER_WARMUP_MAX_SOURCES = KNOWN_BANS_MAX_SOURCES
export const ENGINE_DEFERRED_REASON = 'security engine unreachable: push deferred so the proxy keeps enforcing the decisions it holds'

/** The stored row of the last push; its status is the health answer's word (state.ts). */
export interface ReconcileState {
  last_reconcile_at: string | null
  last_reconcile_status: 'ok' | 'pending' | 'never'
  last_error: string | null
  pushed_hash: string | null
  pushed_at: string | null
  warnings: string[]
}
/**
 * What a push answers (presentReconcile; the restore of a backup answers it whole). `deferred`:
 * pending because the security engine is unreachable (the proxy was not contacted).
 */
export type ReconcileOutcome = { status: ReturnType<typeof reconcileStatusWord>; error?: string; warnings: string[]; deferred?: boolean }

function _answer(outcome: SyncOutcome, warnings: string[], error?: string): ReconcileOutcome {
  return {
    status: reconcileStatusWord(outcome),
    ...(error ? { error } : {}),
    warnings,
    ...(outcome === 'deferred' ? { deferred: true } : {}),
  }
}

const _STATE_KEY = 'proxy.reconcile'
const _EMPTY: ReconcileState = {
  last_reconcile_at: null,
  last_reconcile_status: 'never',
  last_error: null,
  pushed_hash: null,
  pushed_at: null,
  warnings: [],
}

export async function readReconcileState(exec: Executor = getDb()): Promise<ReconcileState> {
  return (await readRuntimeState<ReconcileState>(_STATE_KEY, exec)) ?? _EMPTY
}

/** Whether the configuration runs the bouncer: loading it (re)starts it with an empty store. */
export function configStartsBouncer(config: Json): boolean {
  const apps = (config as { apps?: Record<string, unknown> }).apps
  return !!apps && 'crowdsec' in apps
}

/** What the canary (PROXY_ADMIN_URL) holds, hashed as the reconciler hashes what it pushes. */
const _CANARY_SLOT = 'canary'
export function readCanaryHeld(): Promise<HeldConfig | { ok: false; error: string }> {
  return readHeldConfig(_CANARY_SLOT, getConfig().proxy.adminUrl, { timeoutMs: 2_000 }, hashProxyConfig)
}

/** The proxy holds this configuration (warm-up routes aside): a push would change nothing but restart the bouncer. */
async function _proxyHolds(hash: string): Promise<boolean> {
  const held = await readCanaryHeld()
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
// A hook, because revisions/ calls this module (a revert is a push): importing it here would be a cycle.
type _PushedHook = (tx: Tx, ctx: AuditContext, pushed: { reason: string; hash: string; json: string }) => Promise<void>
const _pushedHooks: _PushedHook[] = []
export function onConfigPushed(hook: _PushedHook): void {
  _pushedHooks.push(hook)
}

// --- the decision

/** What decides how a configuration is pushed. */
export interface PushFacts {
  /** Loading the configuration (re)starts the bouncer with an empty store. */
  startsBouncer: boolean
  /** The security engine answered its probe (true when not probed: no bouncer). */
  engineUp: boolean
  /** The bans last read from the engine are known (security/known-bans.ts). */
  knownBans: boolean
  /** Some enabled host refuses everything while the engine is unreachable. */
  failClosed: boolean
  /** The proxy was last given the configuration for an unreachable engine. */
  pushedEngineDown: boolean
  /** Push even when the proxy holds this configuration (files behind it changed). */
  force: boolean
}

export type PushPlan =
  /** `configuration`: the normal one, or the one for an unreachable engine (known bans refused, fail-closed hosts 503). */
  | { kind: 'push'; configuration: 'normal' | 'engine-down'; unlessHeld: boolean; warmup: boolean }
  /** Wait for the engine: the change stays committed and the loop pushes once it answers. */
  | { kind: 'defer'; unlessHeld: boolean }

/**
 * The pure decision: which configuration, whether a push is skipped when the proxy already
 * holds it (`unlessHeld`: every push restarts the bouncer), and whether the sources banned now
 * are refused while the new bouncer loads (`warmup`). See the module comment's engine-down rule.
 */
export function decidePush(f: PushFacts): PushPlan {
  if (!f.startsBouncer) return { kind: 'push', configuration: 'normal', unlessHeld: false, warmup: false }
  // The configuration for an unreachable engine is pushed when some host must then refuse,
  // or when the proxy already runs it (its bouncer's store is gone already). Otherwise the
  // proxy's bouncer still holds every ban it pulled, newer ones included: the push waits.
  if (!f.engineUp && f.knownBans && (f.failClosed || f.pushedEngineDown))
    return { kind: 'push', configuration: 'engine-down', unlessHeld: !f.force, warmup: false }
  if (!f.engineUp) return { kind: 'defer', unlessHeld: !f.force }
  return { kind: 'push', configuration: 'normal', unlessHeld: !f.force, warmup: true }
}

/** A configuration as pushed: its object, its stable text and the hash of that text. */
interface _Built {
  config: Record<string, unknown>
  json: string
  hash: string
}
function _built(config: Record<string, unknown>): _Built {
  const json = stableStringify(config)
  // Built without a warm-up route (that one is built into the pushed text only): the text is what hashProxyConfig hashes.
  return { config, json, hash: hashOfConfigText(json) }
}

/** One push being made: what the recording needs besides its outcome. */
interface _Push {
  tx: Tx
  ctx: AuditContext
  reason: string
  now: string
  previous: ReconcileState
  warnings: string[]
  hosts: number
  failClosed: boolean
  force: boolean
  redact: (text: string) => Promise<string>
}

/** Builds from the transaction's view of the database and pushes; see the module comment. */
export async function reconcileInTransaction(
  tx: Tx,
  ctx: AuditContext,
  reason: string,
  opts: { force?: boolean } = {},
): Promise<ReconcileOutcome> {
  // A dry run (?dry_run=1) never reaches the proxy: its transaction is described and rolled back (core/db.ts).
  if (isDryRun()) return _answer('rehearsed', [])
  // Every write that changes hosts reconciles (imports, revisions too): who may enter a host is read again.
  invalidateHostIdentityRules()
  const snapshot = await readProxySnapshot(tx)
  const { config, warnings } = buildProxyConfig(snapshot)
  const push: _Push = {
    tx,
    ctx,
    reason,
    now: new Date().toISOString(),
    previous: await readReconcileState(tx),
    warnings,
    hosts: snapshot.hosts.length,
    failClosed:
      snapshot.hosts.some((h) => h.enabled && h.engine_down_refuse && hostUsesBouncer(snapshot, h)) ||
      (snapshot.streams ?? []).some((s) => streamFailsClosed(snapshot, s)),
    force: !!opts.force,
    // Through the transaction: a credential being saved is only visible there.
    redact: (text: string) => redactSecrets(text, { exec: tx, extra: [snapshot.security.bouncerKey] }),
  }
  const startsBouncer = configStartsBouncer(config)
  const engine = startsBouncer ? await probeEngine({ timeoutMs: ENGINE_PROBE_TIMEOUT_MS }) : { up: true, error: null }
  const known = engine.up ? null : lastKnownBannedSources()
  const plan = decidePush({
    startsBouncer,
    engineUp: engine.up,
    knownBans: !!known,
    failClosed: push.failClosed,
    pushedEngineDown: syncFlags().pushedEngineDown,
    force: push.force,
  })

  let built = _built(config)
  if (plan.kind === 'push' && plan.configuration === 'engine-down' && known) {
    // The bans last known refused by the proxy itself (the new bouncer starts empty and cannot pull).
    built = _built(buildProxyConfig({ ...snapshot, engineDown: { knownBanned: known.sources } }).config)
    warnings.push(
      await push.redact(
        `security engine unreachable (${engine.error}): the proxy refuses the ${known.sources.length} bans last read at ${known.at}${push.failClosed ? ', and hosts that fail closed answer 503' : ''}, until it answers again`,
      ),
    )
  }
  const engineDown = plan.kind === 'push' && plan.configuration === 'engine-down'
  if (plan.unlessHeld && (await _proxyHolds(built.hash))) return _recordHeld(push, built, engineDown, 'unchanged')
  if (plan.kind === 'defer') return _recordDeferred(push, built, engine.error ?? '')
  return _rollOutAndRecord(push, plan, snapshot, built)
}

// --- the roll-out

async function _rollOutAndRecord(
  push: _Push,
  plan: PushPlan & { kind: 'push' },
  snapshot: ProxySnapshot,
  built: _Built,
): Promise<ReconcileOutcome> {
  /** With the bouncer warm-up route; revisions keep `built.json` (the same hash, without the passing ban list). */
  let pushedJson: string | undefined
  if (plan.warmup) {
    const bouncerWarmup = await _warmupGate(push.warnings, push.redact)
    if (bouncerWarmup) pushedJson = stableStringify(buildProxyConfig({ ...snapshot, bouncerWarmup }).config)
  }
  // force: files behind the config changed (a re-uploaded certificate) while the JSON did not.
  // Node by node, the canary (PROXY_ADMIN_URL) first: with it alone, the single push of before.
  // The warm-up route does not count in the node hash: the one of `json` is the one of what is pushed.
  const roll = await rollOut(push.tx, pushedJson ?? built.json, {
    force: push.force,
    nodeHash: nodeConfigHashOfText(built.config, built.json),
  })
  push.warnings.push(...roll.warnings)
  const result = roll.result
  if (result.outcome === 'rejected') {
    const proxyError = await push.redact(result.proxyError)
    proxySync.pushRejected(push.now, proxyError)
    logger.warn(`proxy rejected the configuration (${push.reason}): ${proxyError}`)
    throw proxyRejected(proxyError)
  }
  if (result.outcome === 'unreachable') return _recordUnreachable(push, await push.redact(result.error))
  return _recordHeld(push, built, plan.configuration === 'engine-down', 'applied', roll.nodeHash)
}

// --- the recording

async function _writeState(push: _Push, outcome: SyncOutcome, o: { error: string | null; pushedHash?: string }): Promise<void> {
  const status = healthStatusWord(outcome)
  await writeRuntimeState(push.tx, _STATE_KEY, {
    ...push.previous,
    last_reconcile_at: push.now,
    last_reconcile_status: status === 'rejected' ? 'pending' : status,
    last_error: o.error,
    ...(o.pushedHash ? { pushed_hash: o.pushedHash, pushed_at: push.now } : {}),
    warnings: push.warnings,
  } satisfies ReconcileState)
}

/** The engine does not answer: nothing pushed; recorded once, not on every retry of the loop. */
async function _recordDeferred(push: _Push, built: _Built, engineError: string): Promise<ReconcileOutcome> {
  const error = await push.redact(`${ENGINE_DEFERRED_REASON} (${engineError})`)
  const repeat = push.previous.last_reconcile_status === 'pending' && push.previous.last_error === error
  proxySync.pushDeferred(push.now, error)
  if (!repeat) {
    await _writeState(push, 'deferred', { error })
    logger.warn(`proxy push deferred (${push.reason}): ${error}`)
  }
  // The loop's own retries while the engine stays down change nothing and record nothing.
  if (!repeat || push.ctx.actor !== LOOP_ACTOR.actor)
    await writeAudit(
      push.ctx,
      'proxy_push_deferred',
      { reason: push.reason, config_hash: built.hash.slice(0, 16), why: 'security engine unreachable' },
      push.tx,
    )
  return _answer('deferred', push.warnings, error)
}

/** The proxy did not answer: the change stays committed and the loop retries. */
async function _recordUnreachable(push: _Push, error: string): Promise<ReconcileOutcome> {
  proxySync.pushUnreachable(push.now, error)
  await _writeState(push, 'unreachable', { error })
  return _answer('unreachable', push.warnings, error)
}

/** The proxy holds the configuration: pushed now (`applied`) or already (`unchanged`). */
async function _recordHeld(
  push: _Push,
  built: _Built,
  engineDown: boolean,
  outcome: 'applied' | 'unchanged',
  /** The roll-out's nodeConfigHash of what it pushed (none when nothing was pushed). */
  nodeHash?: string,
): Promise<ReconcileOutcome> {
  const last = lastPushed()
  const same = last?.hash === built.hash && last.json === built.json
  // What the other nodes are healed to (nodes/rollout.ts), once this state is committed.
  proxySync.pushRecorded(push.now, outcome, {
    engineDown,
    failClosed: push.failClosed,
    pushed: {
      hash: built.hash,
      json: built.json,
      nodeHash: nodeHash ?? (same ? last.nodeHash : nodeConfigHashOfText(built.config, built.json)),
    },
  })
  await _writeState(push, outcome, { error: null, pushedHash: built.hash })
  const changed = push.previous.pushed_hash !== built.hash
  if (changed || push.force)
    await writeAudit(
      push.ctx,
      'proxy_reconcile',
      { reason: push.reason, config_hash: built.hash.slice(0, 16), hosts: push.hosts, warnings: push.warnings },
      push.tx,
    )
  if (changed) for (const hook of _pushedHooks) await hook(push.tx, push.ctx, { reason: push.reason, hash: built.hash, json: built.json })
  return _answer(outcome, push.warnings)
}

/** A reconcile of its own (boot, restore): the newest database state is pushed. */
export function reconcileNow(reason: string): Promise<ReconcileOutcome> {
  return writeTransaction((tx) => reconcileInTransaction(tx, LOOP_ACTOR, reason))
}

/** The `reconcile` field every proxy-affecting mutation answers with. */
export function presentReconcile(o: ReconcileOutcome) {
  return { status: o.status, ...(o.error ? { error: o.error } : {}), ...(o.warnings.length ? { warnings: o.warnings } : {}) }
}
