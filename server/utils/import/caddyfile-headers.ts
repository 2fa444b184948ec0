import { headerRuleSchema, hstsSchema, type HeaderRule } from '../hosts/header-schemas'

// The Caddyfile importer's `encode` and `header`/`request_header` (docs/import.md):
// pure mappings of the adapted handlers to the host's compression and header rules.
// What does not map is returned as a note for the report, never dropped in silence.

type Json = Record<string, any>
export interface MappedNote {
  list: 'imperfect' | 'notImportable'
  name: string
  why: string
}
export interface HeaderImport {
  compression: 'on' | null
  rules: HeaderRule[]
  hsts: { max_age: number; include_subdomains: boolean; preload: boolean } | null
}

export function emptyHeaderImport(): HeaderImport {
  return { compression: null, rules: [], hsts: null }
}

/** `encode`: the host's compression turned on; the panel's own media types and sizes apply. */
export function importEncode(into: HeaderImport, h: Json, scoped: boolean): MappedNote[] {
  into.compression = 'on'
  const notes: MappedNote[] = []
  const other = Object.keys(h.encodings ?? {}).filter((e) => e !== 'gzip' && e !== 'zstd')
  if (other.length)
    notes.push({ list: 'imperfect', name: 'encode', why: `${other.join(', ')} is not offered: compression uses zstd and gzip` })
  if (h.match || h.minimum_length !== undefined)
    notes.push({
      list: 'imperfect',
      name: 'encode',
      why: "its media types and minimum size are replaced by the panel's compression settings",
    })
  if (scoped) notes.push({ list: 'imperfect', name: 'encode', why: 'compression behind a matcher now applies to the whole host' })
  return notes
}

/** `max-age=N; includeSubDomains; preload` as the HSTS preset, or null when it says anything else. */
function _hstsOf(value: string): HeaderImport['hsts'] {
  const parts = value.split(';').map((p) => p.trim().toLowerCase())
  const age = /^max-age=(\d+)$/.exec(parts[0] ?? '')
  if (!age || parts.slice(1).some((p) => p !== 'includesubdomains' && p !== 'preload')) return null
  const parsed = hstsSchema.safeParse({
    max_age: Number(age[1]),
    include_subdomains: parts.includes('includesubdomains'),
    preload: parts.includes('preload'),
  })
  return parsed.success ? parsed.data : null
}

function _rule(into: HeaderImport, notes: MappedNote[], raw: Omit<HeaderRule, 'value'> & { value: string | null }) {
  if (raw.direction === 'response' && raw.action === 'set' && raw.name.toLowerCase() === 'strict-transport-security') {
    const hsts = _hstsOf(raw.value ?? '')
    if (hsts) into.hsts = hsts
    else
      notes.push({
        list: 'notImportable',
        name: `header ${raw.name}`,
        why: `${raw.name} "${raw.value}" is not a max-age with includeSubDomains and preload; not imported`,
      })
    return
  }
  const parsed = headerRuleSchema.safeParse(raw)
  if (!parsed.success) {
    const problem = parsed.error.issues[0]
    notes.push({
      list: 'notImportable',
      name: `header ${raw.name}`,
      why: `header rule not imported: ${problem?.path.join('.')} ${problem?.message}`,
    })
    return
  }
  if (into.rules.length >= 50) {
    notes.push({ list: 'notImportable', name: `header ${raw.name}`, why: 'a host takes at most 50 header rules; not imported' })
    return
  }
  into.rules.push(parsed.data)
}

/** A `headers` handler (`header`, `request_header`): its set, add and delete operations as rules. */
export function importHeaders(into: HeaderImport, h: Json, scoped: boolean): MappedNote[] {
  const notes: MappedNote[] = []
  for (const direction of ['request', 'response'] as const) {
    const ops: Json | undefined = h[direction]
    if (!ops) continue
    for (const [name, values] of Object.entries<string[]>(ops.set ?? {}))
      for (const value of values.slice(0, 1)) _rule(into, notes, { direction, action: 'set', name, value })
    for (const [name, values] of Object.entries<string[]>(ops.add ?? {}))
      for (const value of values) _rule(into, notes, { direction, action: 'add', name, value })
    for (const name of ops.delete ?? []) _rule(into, notes, { direction, action: 'remove', name: String(name), value: null })
    if (ops.replace)
      notes.push({ list: 'notImportable', name: 'header', why: 'search-and-replace of a header value has no equivalent; not imported' })
    if (ops.require) notes.push({ list: 'imperfect', name: 'header', why: 'a header rule conditional on the response now always applies' })
  }
  if (scoped) notes.push({ list: 'imperfect', name: 'header', why: 'header rules behind a matcher now apply to the whole host' })
  return notes
}
