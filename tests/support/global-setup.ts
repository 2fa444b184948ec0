import { ensureBuilt, REPO_ROOT } from './build'

// Integration tests run the built server (.output/server/index.mjs): build it once
// per run, only when a source is newer than the build. SKIP_PANEL_BUILD=1 skips it.
export default function setup(): void {
  if (process.env.SKIP_PANEL_BUILD === '1') return
  const t0 = Date.now()
  if (ensureBuilt(REPO_ROOT)) console.log(`[global-setup] built the panel in ${Date.now() - t0} ms`)
}
