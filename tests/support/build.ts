import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

// The built panel (.output/server/index.mjs) is what integration tests run.
// Usable from scripts too (Node 24 runs this file directly):
//   node -e "import('./tests/support/build.ts').then(m => process.exit(m.isBuildStale() ? 1 : 0))"

export const REPO_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)))

/** What the build is made from (folders are walked, skipping node_modules and dist). */
export const BUILD_SOURCES = ['routes', 'server', 'db', 'nitro.config.ts', 'ui', 'package.json']

function _newest(path: string): number {
  if (!existsSync(path)) return 0
  const st = statSync(path)
  if (!st.isDirectory()) return st.mtimeMs
  let newest = st.mtimeMs
  for (const name of readdirSync(path))
    if (name !== 'node_modules' && name !== 'dist' && name !== 'dist-html') newest = Math.max(newest, _newest(join(path, name)))
  return newest
}

/** The newest modification time (ms) among the build sources. */
export function newestSourceMtime(root: string = REPO_ROOT): number {
  return Math.max(0, ...BUILD_SOURCES.map((s) => _newest(join(root, s))))
}

/** True when .output/server/index.mjs is missing or older than any file under the build sources. */
export function isBuildStale(root: string = REPO_ROOT): boolean {
  const entry = join(root, '.output/server/index.mjs')
  if (!existsSync(entry)) return true
  return statSync(entry).mtimeMs < newestSourceMtime(root)
}

/** Builds the panel (nitro build) when stale; throws with the build output when it fails. Returns whether it built. */
export function ensureBuilt(root: string = REPO_ROOT): boolean {
  if (!isBuildStale(root)) return false
  const cli = join(root, 'node_modules/nitropack/dist/cli/index.mjs')
  if (!existsSync(cli)) throw new Error(`nitropack is not installed in ${root}: run npm ci (bash scripts/test.sh does)`)
  // The web UI first (ui -> ui/dist): nitro build copies it into the output.
  const ui = spawnSync(process.execPath, [join(root, 'scripts/build-ui.mjs')], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, UI_BUILD_QUIET: '1' },
  })
  if (ui.status !== 0) throw new Error(`the web UI build failed (exit ${ui.status ?? ui.signal}):\n${ui.stdout}\n${ui.stderr}`)
  const r = spawnSync(process.execPath, [cli, 'build'], { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })
  if (r.error) throw new Error(`the panel build could not run: ${r.error.message}`)
  if (r.status !== 0) throw new Error(`the panel build failed (exit ${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`)
  // (Not re-checking staleness: sources may be edited while the build runs.)
  if (!existsSync(join(root, '.output/server/index.mjs')))
    throw new Error(`the panel build succeeded but wrote no .output/server/index.mjs:\n${r.stdout}\n${r.stderr}`)
  return true
}
