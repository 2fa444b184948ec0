import { createStorage, type Storage } from 'unstorage'

// Caches and short-lived state go through unstorage (memory by default) so that
// several replicas can later share them through another driver.

let _storage: Storage | undefined

export function getKv(): Storage {
  _storage ??= createStorage()
  return _storage
}

interface _Entry<T> { value: T; expiresAtMs: number }

export async function kvGetFresh<T>(key: string): Promise<T | undefined> {
  const entry = await getKv().getItem<_Entry<T>>(key)
  if (!entry) return undefined
  if (entry.expiresAtMs <= Date.now()) {
    await getKv().removeItem(key)
    return undefined
  }
  return entry.value
}

export async function kvSetWithTtl<T>(key: string, value: T, ttlMs: number): Promise<void> {
  await getKv().setItem(key, { value, expiresAtMs: Date.now() + ttlMs } satisfies _Entry<T>)
}

export async function kvRemove(key: string): Promise<void> {
  await getKv().removeItem(key)
}

/** Drops every cached entry (after the database under them was replaced). */
export async function kvClearAll(): Promise<void> {
  await getKv().clear()
}
