import { eq } from 'drizzle-orm'
import { streams } from '../../../db/schema'
import type { Executor } from '../core/db'
import { camelCaseKeys, snakeCaseKeys, type SameKeys, type SnakeCased } from '../core/row-keys'
import type { Stream } from './schemas'

// Row <-> record mapping of streams, and the reads the proxy snapshot and the
// conflict checks make. Imports nothing from proxy/ or hosts/hosts.ts: both depend on it.

export type StreamRow = typeof streams.$inferSelect
type _Timestamps = 'createdAt' | 'updatedAt'

// A column added to the table and not to the record (or the reverse) fails the type check here.
const _streamColumnsMatch: SameKeys<SnakeCased<Omit<StreamRow, _Timestamps>>, Stream> = true
void _streamColumnsMatch

export function streamFromRow(row: StreamRow): Stream {
  const { createdAt: _created, updatedAt: _updated, ...columns } = row
  return snakeCaseKeys(columns)
}

/** The columns a create or an update writes (the id and timestamps are the caller's). */
export function streamToRow(fields: Omit<Stream, 'id'>): Omit<StreamRow, 'id' | _Timestamps> {
  return camelCaseKeys(fields)
}

/** Every stream, enabled or not, by id: what the proxy snapshot carries (a disabled one opens no listener). */
export async function readStreams(exec: Executor): Promise<Stream[]> {
  return (await exec.select().from(streams).orderBy(streams.id)).map(streamFromRow)
}

/** The first stream pointing at a target group, or undefined: a group a stream uses cannot be deleted. */
export async function streamUsingTargetGroup(exec: Executor, groupId: number) {
  return exec
    .select({ id: streams.id, name: streams.name })
    .from(streams)
    .where(eq(streams.targetGroupId, groupId))
    .orderBy(streams.id)
    .get()
}

/** The first stream behind an access list, or undefined. */
export async function streamUsingAccessList(exec: Executor, listId: number) {
  return exec.select({ id: streams.id, name: streams.name }).from(streams).where(eq(streams.accessListId, listId)).orderBy(streams.id).get()
}
