import { eq } from 'drizzle-orm'
import { runtimeState } from '../../../db/schema'
import { getDb, type Executor } from './db'

/** Small JSON records of the panel's own state (last reconcile, task runs). */
export async function readRuntimeState<T>(key: string, exec: Executor = getDb()): Promise<T | undefined> {
  const row = await exec.select().from(runtimeState).where(eq(runtimeState.key, key)).get()
  return row ? (JSON.parse(row.value) as T) : undefined
}

export async function writeRuntimeState(exec: Executor, key: string, value: unknown): Promise<void> {
  const now = new Date().toISOString()
  await exec.insert(runtimeState).values({ key, value: JSON.stringify(value), updatedAt: now })
    .onConflictDoUpdate({ target: runtimeState.key, set: { value: JSON.stringify(value), updatedAt: now } })
}
