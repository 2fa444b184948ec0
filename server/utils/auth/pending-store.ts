import { createHash } from 'node:crypto'
import { prefixStorage, type Storage } from 'unstorage'
import { getKv } from '../core/kv'
import { nowMs } from '../core/clock'

// Short-lived, single-use records keyed by a random token (OIDC state, pending
// TOTP login). They live in unstorage (memory by default) so that several
// replicas can later share them through another driver. Keys are the SHA-256
// of the token: the lookup never compares the secret itself.

interface _Entry<T> {
  value: T
  expiresAtMs: number
}

export interface PendingStore<T> {
  put(token: string, value: T): Promise<void>
  /** Returns the record once and removes it; unknown, used or expired: null. */
  take(token: string): Promise<T | null>
  /** Reads without consuming (a pending TOTP login survives a wrong code). */
  peek(token: string): Promise<T | null>
  remove(token: string): Promise<void>
  /** Removes every expired record; returns how many. */
  sweepExpired(): Promise<number>
}

const _hashToken = (token: string) => createHash('sha256').update(token).digest('hex')

export function createPendingStore<T>(opts: { storage?: Storage; prefix: string; ttlMs: number; now?: () => number }): PendingStore<T> {
  const storage = prefixStorage(opts.storage ?? getKv(), opts.prefix)
  const now = opts.now ?? nowMs
  // Tokens being taken right now: a second, concurrent take of the same token
  // finds its claim and gets null, so a record is consumed exactly once.
  const claimed = new Set<string>()

  const read = async (key: string): Promise<T | null> => {
    const entry = await storage.getItem<_Entry<T>>(key)
    if (!entry) return null
    if (entry.expiresAtMs <= now()) {
      await storage.removeItem(key)
      return null
    }
    return entry.value
  }

  return {
    async put(token, value) {
      await storage.setItem(_hashToken(token), { value, expiresAtMs: now() + opts.ttlMs } satisfies _Entry<T>)
    },
    async take(token) {
      if (!token || token.length > 256) return null
      const key = _hashToken(token)
      if (claimed.has(key)) return null
      claimed.add(key)
      try {
        const value = await read(key)
        if (value !== null) await storage.removeItem(key)
        return value
      } finally {
        claimed.delete(key)
      }
    },
    async peek(token) {
      if (!token || token.length > 256) return null
      const key = _hashToken(token)
      if (claimed.has(key)) return null
      return read(key)
    },
    async remove(token) {
      await storage.removeItem(_hashToken(token))
    },
    async sweepExpired() {
      let removed = 0
      const t = now()
      for (const key of await storage.getKeys()) {
        const entry = await storage.getItem<_Entry<T>>(key)
        if (entry && entry.expiresAtMs > t) continue
        await storage.removeItem(key)
        removed++
      }
      return removed
    },
  }
}
