import { createStorage, type Storage } from 'unstorage'

// Caches and short-lived state go through this module so that several replicas
// can later share them through an unstorage driver. Today the storage is
// unstorage's in-memory driver, and that driver serialises every value to JSON
// on write and parses it again on every read: for a 50,000-decision list that
// is most of the cost of a cached answer. While the storage is process-local
// the entries are therefore kept as objects in a Map; the unstorage instance is
// still what getKv() returns for callers that need a Storage.

let _storage: Storage | undefined
const _local = new Map<string, _Entry<unknown>>()

export function getKv(): Storage {
  _storage ??= createStorage()
  return _storage
}

interface _Entry<T> {
  value: T
  expiresAtMs: number
}

export async function kvGetFresh<T>(key: string): Promise<T | undefined> {
  return kvPeekFresh<T>(key)
}

/** kvGetFresh without a promise, for the hottest path (ForwardAuth): valid while the storage is process-local. */
export function kvPeekFresh<T>(key: string): T | undefined {
  const entry = _local.get(key) as _Entry<T> | undefined
  if (!entry) return undefined
  if (entry.expiresAtMs <= Date.now()) {
    _local.delete(key)
    return undefined
  }
  return entry.value
}

/** Stores a value for ttlMs. The caller must not mutate the value afterwards (it is kept by reference). */
export async function kvSetWithTtl<T>(key: string, value: T, ttlMs: number): Promise<void> {
  _local.set(key, { value, expiresAtMs: Date.now() + ttlMs })
}

export async function kvRemove(key: string): Promise<void> {
  _local.delete(key)
}

/** Drops every cached entry (after the database under them was replaced). */
export async function kvClearAll(): Promise<void> {
  _local.clear()
  await getKv().clear()
}
