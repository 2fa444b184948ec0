import type { InStatement } from '@libsql/client'
import { getClient } from '../core/db'
import type { Position } from './tailer'

// Where the ingester is in each file (table log_offsets). A position is saved in the same
// transaction as the rows read up to it, so a restart neither loses nor duplicates rows.

export async function readPosition(path: string): Promise<Position | null> {
  const r = await getClient().execute({ sql: 'SELECT inode, offset_bytes, head FROM log_offsets WHERE path = ?', args: [path] })
  const row = r.rows[0]
  return row ? { inode: Number(row.inode), offset: Number(row.offset_bytes), head: String(row.head ?? '') } : null
}

export function savePosition(path: string, pos: Position): InStatement {
  return {
    sql: `INSERT INTO log_offsets (path, inode, offset_bytes, updated_at, head) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (path) DO UPDATE SET inode = excluded.inode, offset_bytes = excluded.offset_bytes, updated_at = excluded.updated_at, head = excluded.head`,
    args: [path, pos.inode, pos.offset, new Date().toISOString(), pos.head],
  }
}
