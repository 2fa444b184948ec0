import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { REPO_ROOT } from './build'

// Where the real edge's binaries are: the production Caddy and CrowdSec built
// by scripts/build-edge.sh into a cache outside the checkout (scripts/test.sh
// exports the paths; otherwise the script is asked, which costs a few hashes).

export interface EdgeBinaries {
  caddy: string
  crowdsec: string
  cscli: string
}

let _bins: EdgeBinaries | undefined

export function edgeBinaries(): EdgeBinaries {
  if (_bins) return _bins
  let env: Record<string, string | undefined> = process.env
  if (!env.PANEL_TEST_CADDY_BIN || !env.PANEL_TEST_CROWDSEC_BIN || !env.PANEL_TEST_CSCLI_BIN) {
    let out: string
    try {
      out = execFileSync('bash', [join(REPO_ROOT, 'scripts/build-edge.sh'), '--paths'], { encoding: 'utf8' })
    } catch {
      throw new Error('the production Caddy and CrowdSec are not built: run bash scripts/test.sh (or bash scripts/build-edge.sh)')
    }
    env = Object.fromEntries(
      out
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    )
  }
  _bins = { caddy: env.PANEL_TEST_CADDY_BIN!, crowdsec: env.PANEL_TEST_CROWDSEC_BIN!, cscli: env.PANEL_TEST_CSCLI_BIN! }
  return _bins
}

/** Debian's stock Caddy 2.6.2 (no plugins): only the compatibility suite runs it. */
export const STOCK_CADDY_BIN = '/usr/bin/caddy'
