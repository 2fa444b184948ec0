// npm run bench [-- name-filter]: runs bench/*.bench.ts and prints figures against the budgets.
import { spawnSync } from 'node:child_process'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const r = spawnSync(
  process.execPath,
  [join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'bench/vitest.bench.config.ts', ...process.argv.slice(2)],
  { cwd: root, stdio: 'inherit' },
)
process.exit(r.status ?? 1)
