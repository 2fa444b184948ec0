import { getSetting } from '../core/settings'

// What would make the proxy better, for /api/dashboard/health: kept apart from
// the problems (ops/problems.ts), because nothing here is broken and the health
// must stay "OK". Each suggestion says what and where in the panel it is done.

export type SuggestionKind = 'compression_off'

export interface Suggestion {
  kind: SuggestionKind
  /** What to do and why, in words. */
  text: string
  /** The web UI path (with the field as #fragment) where it is done. */
  fix: { to: string; text: string }
}

export async function listSuggestions(): Promise<Suggestion[]> {
  const out: Suggestion[] = []
  // An upgraded panel keeps compression off (migration 0039) until the operator turns it on.
  if ((await getSetting<boolean>('proxy.compression')) === false)
    out.push({
      kind: 'compression_off',
      text: 'Compression is off: turning it on makes pages, scripts and styles smaller and faster to load, for every host that follows the setting.',
      // The id the settings form gives the field (ui/src/settings/SettingsForm.vue, fieldId).
      fix: { to: '/settings#setting-proxy-compression', text: 'Compression in Settings' },
    })
  return out
}
