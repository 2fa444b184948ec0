import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const _SOURCES = ['routes', 'server', 'db', 'ui', 'nitro.config.ts', 'package.json']

function _newest(path: string): number {
  if (!existsSync(path)) return 0
  const st = statSync(path)
  if (!st.isDirectory()) return st.mtimeMs
  let newest = st.mtimeMs
  for (const name of readdirSync(path)) if (name !== 'node_modules' && name !== 'dist') newest = Math.max(newest, _newest(join(path, name)))
  return newest
}

export function isBuildStale(root: string): boolean {
  const entry = join(root, '.output/server/index.mjs')
  if (!existsSync(entry)) return true
  return statSync(entry).mtimeMs < Math.max(..._SOURCES.map((s) => _newest(join(root, s))))
}

export function ensureBuilt(root: string): void {
  if (!isBuildStale(root)) return
  const r = spawnSync(process.execPath, [join(root, 'node_modules/nitropack/dist/cli/index.mjs'), 'build'], { cwd: root, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`the panel build failed:\n${r.stdout}\n${r.stderr}`)
}
