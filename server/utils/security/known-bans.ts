// The sources the engine had banned when the panel last read them. While the
// engine is unreachable, a push (which empties the bouncer's store, with no way
// to refill it) carries them in the configuration instead (build/crowdsec.ts).
// Kept in memory: a panel restarted while the engine is down has none, and its
// pushes wait for the engine (proxy/sync/reconcile.ts). With the decision mirror
// (LAPI_PANEL_BOUNCER_KEY) they are the mirror's, as of its last pull; without
// it, what the engine probe and the pushes last read.

import { mirrorBannedSources, mirrorEnabled } from './mirror'

/** Beyond this the list would make every pushed configuration too large. */
export const KNOWN_BANS_MAX_SOURCES = 50_000

let _known: { sources: string[]; at: string } | null = null

export function rememberBannedSources(sources: string[]): void {
  _known = sources.length <= KNOWN_BANS_MAX_SOURCES ? { sources, at: new Date().toISOString() } : null
}

export function lastKnownBannedSources(): { sources: string[]; at: string } | null {
  if (mirrorEnabled()) {
    const m = mirrorBannedSources()
    return m && m.sources.length <= KNOWN_BANS_MAX_SOURCES ? m : null
  }
  return _known
}
