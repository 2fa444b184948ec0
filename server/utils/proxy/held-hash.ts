import { hash } from 'node:crypto'

// The reconcile loop reads what the canary and every other node hold every two
// seconds and compares hashes. Sorting the keys of a 10,000-host configuration
// and hashing it took 140-170 ms a look, for a configuration that almost never
// changes. Caddy answers the same bytes for the same configuration, so a hash
// is remembered with a digest of the text it came from (5 ms for 8 MB; the
// text itself would keep 8 MB per node alive), one slot per proxy and kind of
// hash, and an unchanged text reuses it.

const _bySlot = new Map<string, { textDigest: string; hash: string }>()

/** `hashOf(held.config)`, computed again only when the held text differs from the slot's last one; null for an empty configuration. */
export function heldConfigHash(slot: string, held: { config: unknown; text: string }, hashOf: (config: unknown) => string): string | null {
  if (held.config === null) return null
  const textDigest = hash('sha256', held.text, 'base64')
  const last = _bySlot.get(slot)
  if (last?.textDigest === textDigest) return last.hash
  const configHash = hashOf(held.config)
  _bySlot.set(slot, { textDigest, hash: configHash })
  return configHash
}
