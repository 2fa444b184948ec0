import { getQuery, type H3Event } from 'h3'
import { getDb, rehearse, type Executor, type Tx } from '../../core/db'
import { badRequest } from '../../core/errors'
import { knownSecrets, makeRedactor, redactJson } from '../../core/redact'
import { buildProxyConfig, hashProxyConfig } from '../build/index'
import { readProxySnapshot } from '../snapshot'
import { collectDesiredState, diffDesiredState, type ObjectChange } from './desired-state'
import { diffConfigs, type ConfigChange } from './config-diff'

// `?dry_run=1` on a mutating route (docs/revisions.md): the mutation runs as
// usual inside its transaction, validation and conflicts included, but the
// reconciler does not push, and just before commit the transaction's state is
// compared with the committed one and the transaction is rolled back (the flag
// and the roll-back live with the transactions, core/db.ts). Nothing is written
// (audit rows included) and the proxy is not contacted.

export interface DryRunAnswer {
  dry_run: true
  /** Whether the proxy configuration would change (a push would happen). */
  would_push: boolean
  changes: ObjectChange[]
  config_diff: ConfigChange[]
  config_diff_truncated: boolean
  warnings: string[]
}

/** Whether the request asks for a dry run: dry_run=1|true (0|false or absent: no). */
export function dryRunRequested(event: H3Event): boolean {
  const v = getQuery(event).dry_run
  if (v === undefined) return false
  if (v === '1' || v === 'true') return true
  if (v === '0' || v === 'false') return false
  throw badRequest('dry_run: must be 1 (answer the changes, apply nothing) or 0')
}

async function _configOf(exec: Executor, redact: (t: string) => string) {
  const built = buildProxyConfig(await readProxySnapshot(exec))
  return { config: redactJson(built.config, redact), hash: hashProxyConfig(built.config), warnings: built.warnings }
}

/** What the transaction would change: objects and fields, and the configuration (secrets masked). */
export async function describePendingChange(tx: Tx): Promise<DryRunAnswer> {
  const redact = makeRedactor([...(await knownSecrets(tx)), ...(await knownSecrets(getDb()))])
  const before = await _configOf(getDb(), redact)
  const after = await _configOf(tx, redact)
  const config = diffConfigs(before.config, after.config)
  return {
    dry_run: true,
    would_push: before.hash !== after.hash,
    changes: diffDesiredState(await collectDesiredState(getDb()), await collectDesiredState(tx)),
    config_diff: config.changes,
    config_diff_truncated: config.truncated,
    warnings: after.warnings.map(redact),
  }
}

/**
 * Runs a mutation, or (with ?dry_run=1) rehearses it: `{dryRun}` then holds the
 * answer and nothing was committed. A mutation that writes nothing answers no changes.
 */
export async function runOrDryRun<T>(event: H3Event, mutation: () => Promise<T>): Promise<{ dryRun: DryRunAnswer } | { result: T }> {
  if (!dryRunRequested(event)) return { result: await mutation() }
  const answer = await rehearse(mutation, describePendingChange)
  return {
    dryRun: answer ?? { dry_run: true, would_push: false, changes: [], config_diff: [], config_diff_truncated: false, warnings: [] },
  }
}
