import { hash } from 'node:crypto'
import { adminUrlOf, readProxyConfigText, type AdminTarget } from './client'

// The reconcile loop reads what the canary and every other node hold every two
// seconds and compares hashes. Parsing a 10,000-host configuration (8 MB) took
// 50-80 ms a look and sorting and hashing it 140-170 ms more, for a
// configuration that almost never changes. Caddy answers the same bytes for the
// same configuration, so a hash is remembered with a digest of the text it came
// from (5 ms for 8 MB; the text itself would keep 8 MB per node alive), one
// slot per proxy and kind of hash: an unchanged text reuses the hash and is
// parsed only if a caller asks for the configuration itself.

const _bySlot = new Map<string, { textDigest: string; hash: string | null }>()

/** What a proxy holds: its hash (null for an empty configuration) and, parsed when first asked for, the configuration. */
export interface HeldConfig {
  ok: true
  hash: string | null
  readonly config: unknown
}

const _parse = (text: string): unknown => (text.trim() ? JSON.parse(text) : null)

/**
 * `text` as a held configuration, hashed with `hashOf` unless the slot's last
 * text was the same. Throws when a new text is not JSON.
 */
export function heldConfigOf(slot: string, text: string, hashOf: (config: unknown) => string): HeldConfig {
  const textDigest = hash('sha256', text, 'base64')
  const last = _bySlot.get(slot)
  if (last?.textDigest === textDigest) {
    let parsed: { config: unknown } | undefined
    // This text was parsed before: parsing it again cannot fail.
    return {
      ok: true,
      hash: last.hash,
      get config() {
        parsed ??= { config: _parse(text) }
        return parsed.config
      },
    }
  }
  const config = _parse(text)
  const configHash = config === null ? null : hashOf(config)
  _bySlot.set(slot, { textDigest, hash: configHash })
  return { ok: true, hash: configHash, config }
}

/** GET /config/ of `admin`, as a held configuration of `slot` (see heldConfigOf). */
export async function readHeldConfig(
  slot: string,
  admin: string | AdminTarget,
  opts: { timeoutMs?: number },
  hashOf: (config: unknown) => string,
): Promise<HeldConfig | { ok: false; error: string }> {
  const read = await readProxyConfigText(admin, opts)
  if (!read.ok) return read
  try {
    return heldConfigOf(slot, read.text, hashOf)
  } catch (err) {
    return {
      ok: false,
      error: `proxy admin API at ${adminUrlOf(admin)} answered a configuration that is not JSON: ${(err as Error).message}`,
    }
  }
}
