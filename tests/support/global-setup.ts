import { fileURLToPath } from 'node:url'
import { ensureBuilt } from './build'

// Integration tests run the built server: build once, when the sources are newer.
export default function setup() {
  if (process.env.SKIP_PANEL_BUILD === '1') return
  ensureBuilt(fileURLToPath(new URL('../..', import.meta.url)))
}
