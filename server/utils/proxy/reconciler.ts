import { getConfig } from '../core/config'
import { getDb, writeTransaction, type Executor, type Tx } from '../core/db'
import { proxyRejected } from '../core/errors'
import { writeAudit, systemActor, type AuditContext } from '../core/audit'
import { logger } from '../core/log'
import { readRuntimeState, writeRuntimeState } from '../core/runtime-state'
import { buildProxyConfig, hashProxyConfig, stableStringify } from './build/index'
import { loadProxyConfig, readProxyConfig } from './client'
import { readProxySnapshot } from './snapshot'

// Database -> pure builder -> POST /load, inside the mutation's transaction:
// a rejection rolls the change back (502 with the proxy's text); an unreachable
// proxy keeps the change as "pending" and the loop below retries it.

export interface ReconcileState {
  last_reconcile_at: string | null
  last_reconcile_status: 'ok' | 'pending' | 'never'
  last_error: string | null
  pushed_hash: string | null
  pushed_at: string | null
  warnings: string[]
}
export type ReconcileOutcome = { status: 'applied' | 'pending'; error?: string; warnings: string[] }

const _STATE_KEY = 'proxy.reconcile'
const _EMPTY: ReconcileState = { last_reconcile_at: null, last_reconcile_status: 'never', last_error: null, pushed_hash: null, pushed_at: null, warnings: [] }

/** The last attempt, including rejections (which roll back and so leave no row). */
let _lastAttempt: { at: string; status: 'ok' | 'pending' | 'rejected'; error: string | null } | undefined
let _retryRequested = false

export async function readReconcileState(exec: Executor = getDb()): Promise<ReconcileState> {
  return (await readRuntimeState<ReconcileState>(_STATE_KEY, exec)) ?? _EMPTY
}

/** Builds from the transaction's view of the database and pushes; see the module comment. */
export async function reconcileInTransaction(tx: Tx, ctx: AuditContext, reason: string, opts: { force?: boolean } = {}): Promise<ReconcileOutcome> {
  const snapshot = await readProxySnapshot(tx)
  const { config, warnings } = buildProxyConfig(snapshot)
  const json = stableStringify(config)
  const hash = hashProxyConfig(config)
  const now = new Date().toISOString()
  // force: files behind the config changed (a re-uploaded certificate) while the JSON did not.
  const result = await loadProxyConfig(getConfig().proxy.adminUrl, json, { force: opts.force })
  if (result.outcome === 'rejected') {
    _lastAttempt = { at: now, status: 'rejected', error: result.proxyError }
    logger.warn(`proxy rejected the configuration (${reason}): ${result.proxyError}`)
    throw proxyRejected(result.proxyError)
  }
  const previous = await readReconcileState(tx)
  if (result.outcome === 'unreachable') {
    _lastAttempt = { at: now, status: 'pending', error: result.error }
    _retryRequested = true
    await writeRuntimeState(tx, _STATE_KEY, { ...previous, last_reconcile_at: now, last_reconcile_status: 'pending', last_error: result.error, warnings } satisfies ReconcileState)
    return { status: 'pending', error: result.error, warnings }
  }
  _lastAttempt = { at: now, status: 'ok', error: null }
  await writeRuntimeState(tx, _STATE_KEY, {
    last_reconcile_at: now, last_reconcile_status: 'ok', last_error: null, pushed_hash: hash, pushed_at: now, warnings,
  } satisfies ReconcileState)
  if (previous.pushed_hash !== hash || opts.force)
    await writeAudit(ctx, 'proxy_reconcile', { reason, config_hash: hash.slice(0, 16), hosts: snapshot.hosts.length, warnings }, tx)
  return { status: 'applied', warnings }
}

/** A reconcile of its own (boot, retry, drift): the newest database state is pushed. */
export function reconcileNow(reason: string): Promise<ReconcileOutcome> {
  return writeTransaction((tx) => reconcileInTransaction(tx, systemActor('reconciler'), reason))
}

export function lastReconcileAttempt() {
  return _lastAttempt
}

/**
 * One tick of the loop: retries a pending push, and re-pushes when the proxy
 * holds something other than what was last pushed (it restarted, or someone
 * loaded another configuration). Pushes nothing when nothing changed.
 */
export async function reconcileTick(): Promise<'pushed' | 'pending' | 'in-sync' | 'unreachable' | 'rejected'> {
  const state = await readReconcileState()
  let reason: string | undefined
  if (_retryRequested || state.last_reconcile_status !== 'ok') {
    reason = 'retry of a pending change'
  } else {
    const held = await readProxyConfig(getConfig().proxy.adminUrl)
    if (!held.ok) return 'unreachable'
    if (held.config === null || hashProxyConfig(held.config) !== state.pushed_hash) reason = 'the proxy holds another configuration (restarted?)'
  }
  if (!reason) return 'in-sync'
  _retryRequested = false
  try {
    const outcome = await reconcileNow(reason)
    if (outcome.status === 'pending') return 'pending'
    logger.info(`pushed the proxy configuration: ${reason}`)
    return 'pushed'
  } catch (err) {
    logger.warn(`reconcile failed: ${(err as Error).message}`)
    return 'rejected'
  }
}

/** The `reconcile` field every proxy-affecting mutation answers with. */
export function presentReconcile(o: ReconcileOutcome) {
  return { status: o.status, ...(o.error ? { error: o.error } : {}), ...(o.warnings.length ? { warnings: o.warnings } : {}) }
}
