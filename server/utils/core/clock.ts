import { readFileSync } from 'node:fs'
import { getConfig } from './config'

// The clock of short-lived auth state (OIDC pending states, TOTP steps, pending
// TOTP logins). In production it is Date.now(). A test sets
// PANEL_TEST_CLOCK_OFFSET_FILE and writes a number of milliseconds into that
// file to move this clock forward without waiting (docs/testing.md).

export function nowMs(): number {
  const file = getConfig().testClockOffsetFile
  if (!file) return Date.now()
  let offset = 0
  try {
    offset = Number(readFileSync(file, 'utf8').trim()) || 0
  } catch {
    /* no file yet: no offset */
  }
  return Date.now() + offset
}
