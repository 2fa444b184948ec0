import { describe, expect, it } from 'vitest'
import { createStorage } from 'unstorage'
import { createPendingStore } from '../../server/utils/auth/pending-store'

// The pending store of OIDC states and TOTP logins, on unstorage's memory
// driver with a clock the test moves.

function storeWithClock(ttlMs = 10 * 60_000) {
  const clock = { now: 1_000_000 }
  const storage = createStorage()
  const store = createPendingStore<{ nonce: string }>({ storage, prefix: 'test', ttlMs, now: () => clock.now })
  return { clock, storage, store }
}

describe('pending store', () => {
  it('gives a record back once (single use)', async () => {
    const { store } = storeWithClock()
    await store.put('state-1', { nonce: 'n1' })
    expect(await store.peek('state-1')).toEqual({ nonce: 'n1' })
    expect(await store.take('state-1')).toEqual({ nonce: 'n1' })
    expect(await store.take('state-1')).toBeNull()
    expect(await store.take('never-put')).toBeNull()
    expect(await store.take('')).toBeNull()
  })

  it('hands a record to only one of two concurrent takes', async () => {
    const { store } = storeWithClock()
    await store.put('state-2', { nonce: 'n2' })
    const results = await Promise.all([store.take('state-2'), store.take('state-2'), store.take('state-2')])
    expect(results.filter((r) => r !== null)).toHaveLength(1)
  })

  it('keys records by a hash of the token, never the token itself', async () => {
    const { store, storage } = storeWithClock()
    await store.put('secret-state-value', { nonce: 'n' })
    const keys = await storage.getKeys()
    expect(keys).toHaveLength(1)
    expect(keys[0]).not.toContain('secret-state-value')
  })

  it('a record past its lifetime is gone, and the sweep removes expired ones only', async () => {
    const { clock, store, storage } = storeWithClock(10 * 60_000)
    await store.put('old', { nonce: 'a' })
    clock.now += 9 * 60_000
    await store.put('young', { nonce: 'b' })
    clock.now += 60_000 // 'old' is exactly 10 minutes old now
    expect(await store.peek('old')).toBeNull()
    await store.put('old2', { nonce: 'c' })
    clock.now += 9 * 60_000 + 1
    expect(await store.sweepExpired()).toBe(1) // 'young'
    expect(await storage.getKeys()).toHaveLength(1)
    expect(await store.take('old2')).toEqual({ nonce: 'c' })
  })
})
