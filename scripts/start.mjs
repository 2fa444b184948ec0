// `npm start`: build when the output is missing or older than the sources, then run it.
import { spawnSync, spawn } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PANEL_NODE_FLAGS } from './node-flags.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const entry = join(root, '.output/server/index.mjs')
const SOURCES = ['routes', 'server', 'db', 'ui', 'nitro.config.ts', 'package.json', 'package-lock.json']

function newestMtime(path) {
  if (!existsSync(path)) return 0
  const st = statSync(path)
  if (!st.isDirectory()) return st.mtimeMs
  let newest = st.mtimeMs
  for (const name of readdirSync(path)) {
    if (name === 'node_modules' || name === 'dist') continue
    newest = Math.max(newest, newestMtime(join(path, name)))
  }
  return newest
}

const builtAt = existsSync(entry) ? statSync(entry).mtimeMs : 0
const sourcesAt = Math.max(...SOURCES.map((s) => newestMtime(join(root, s))))
if (builtAt < sourcesAt) {
  console.log(builtAt ? 'sources changed since the last build: building…' : 'no build yet: building…')
  // The web UI first: nitro build copies ui/dist into the output.
  const ui = spawnSync(process.execPath, [join(root, 'scripts/build-ui.mjs')], { cwd: root, stdio: 'inherit' })
  if (ui.status !== 0) process.exit(ui.status ?? 1)
  const r = spawnSync(process.execPath, [join(root, 'node_modules/nitropack/dist/cli/index.mjs'), 'build'], { cwd: root, stdio: 'inherit' })
  if (r.status !== 0) process.exit(r.status ?? 1)
}
const child = spawn(process.execPath, [...PANEL_NODE_FLAGS, entry], { cwd: root, stdio: 'inherit' })
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig))
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
