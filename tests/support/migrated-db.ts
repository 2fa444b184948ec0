import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll } from 'vitest'
import { closeDatabase, openDatabase } from '../../server/utils/core/db'
import { readMigrationsFromDir } from '../../server/utils/core/migrations'

/**
 * For a unit file: a fresh libSQL file with every migration applied, opened before the file's
 * tests (then `seed` runs) and closed and removed after them. Answers the folder it lives in.
 */
export function useMigratedDatabase(prefix: string, seed?: () => Promise<unknown>): () => string {
  let dir = ''
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), prefix))
    await openDatabase({
      url: `file:${join(dir, 'panel.db')}`,
      migrations: readMigrationsFromDir(fileURLToPath(new URL('../../db/migrations', import.meta.url))),
    })
    await seed?.()
  })
  afterAll(() => {
    closeDatabase()
    rmSync(dir, { recursive: true, force: true })
  })
  return () => dir
}
