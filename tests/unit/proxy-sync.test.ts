import type { H3Event } from 'h3'
import { describe, expect, it } from 'vitest'
import { systemActor } from '../../server/utils/core/audit'
import { getClient, writeTransaction } from '../../server/utils/core/db'
import { runOrDryRun } from '../../server/utils/proxy/revisions/dry-run'
import {
  decidePush,
  readReconcileState,
  reconcileInTransaction,
  type PushFacts,
  type ReconcileOutcome,
} from '../../server/utils/proxy/sync/reconcile'
import { healthStatusWord, reconcileStatusWord } from '../../server/utils/proxy/sync/state'
import { useMigratedDatabase } from '../support/migrated-db'

// Issue 34: the push pipeline's decision and outcome words (server/utils/proxy/sync/).
// A dry run's push is not an applied one: the reconciler is called in a rehearsed
// transaction (real libSQL file); it must neither contact the proxy (none runs
// here) nor report `applied`, and nothing it did may survive the roll-back.

useMigratedDatabase('proxy-sync-dry-run-')

/** What a route hands runOrDryRun: only the query is read. */
const dryRunEvent = { path: '/api/hosts?dry_run=1' } as unknown as H3Event

describe('the reconciler in a dry run', () => {
  it('reports the push as rehearsed, not applied, and leaves nothing behind', async () => {
    let seen: ReconcileOutcome | undefined
    const answer = await runOrDryRun(dryRunEvent, () =>
      writeTransaction(async (tx) => {
        seen = await reconcileInTransaction(tx, systemActor('test'), 'a dry run')
      }),
    )
    expect(seen?.status).toBe('rehearsed')
    expect(seen?.status).not.toBe('applied')
    expect('dryRun' in answer && answer.dryRun.dry_run).toBe(true)
    expect((await readReconcileState()).last_reconcile_status).toBe('never')
    const audit = await getClient().execute("SELECT count(*) AS n FROM logs WHERE source = 'audit'")
    expect(Number(audit.rows[0]?.n)).toBe(0)
  })
})

describe('the push decision (pure)', () => {
  const facts = (f: Partial<PushFacts>): PushFacts => ({
    startsBouncer: true,
    engineUp: true,
    knownBans: true,
    failClosed: false,
    pushedEngineDown: false,
    force: false,
    ...f,
  })
  it('pushes without looking at what the proxy holds when no bouncer is restarted', () => {
    expect(decidePush(facts({ startsBouncer: false, engineUp: false }))).toEqual({
      kind: 'push',
      configuration: 'normal',
      unlessHeld: false,
      warmup: false,
    })
  })
  it('skips a push the proxy holds already (every push restarts the bouncer), unless forced', () => {
    expect(decidePush(facts({}))).toEqual({ kind: 'push', configuration: 'normal', unlessHeld: true, warmup: true })
    expect(decidePush(facts({ force: true }))).toMatchObject({ unlessHeld: false })
  })
  it('waits for the engine unless a host must refuse or the proxy runs the engine-down configuration already', () => {
    expect(decidePush(facts({ engineUp: false }))).toEqual({ kind: 'defer', unlessHeld: true })
    expect(decidePush(facts({ engineUp: false, knownBans: false, failClosed: true }))).toEqual({ kind: 'defer', unlessHeld: true })
    for (const f of [{ failClosed: true }, { pushedEngineDown: true }])
      expect(decidePush(facts({ engineUp: false, ...f }))).toEqual({
        kind: 'push',
        configuration: 'engine-down',
        unlessHeld: true,
        warmup: false,
      })
  })
  it('maps the outcomes to the words the interface fixes, a dry run to neither applied nor pending', () => {
    expect(['applied', 'unchanged'].map((o) => reconcileStatusWord(o as 'applied'))).toEqual(['applied', 'applied'])
    expect(['unreachable', 'deferred'].map((o) => reconcileStatusWord(o as 'deferred'))).toEqual(['pending', 'pending'])
    expect(reconcileStatusWord('rehearsed')).toBe('rehearsed')
    expect([null, 'applied', 'unchanged', 'unreachable', 'deferred', 'rejected'].map((o) => healthStatusWord(o as null))).toEqual([
      'never',
      'ok',
      'ok',
      'pending',
      'pending',
      'rejected',
    ])
  })
})
