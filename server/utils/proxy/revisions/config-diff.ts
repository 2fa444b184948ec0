// Pure: the differences between two proxy configurations as JSON paths, for
// revision diffs and dry runs. Both sides are redacted before they get here.
// Lists of routes and handlers are matched by what they are (docs/revisions.md),
// so a path reads `routes[host=app.example.test].handle[handler=waf]`.

export interface ConfigChange {
  path: string
  change: 'added' | 'removed' | 'changed'
  before?: unknown
  after?: unknown
}

/** A diff of a whole reconfiguration stays readable; past this many entries it is cut (and says so). */
export const CONFIG_DIFF_MAX_ENTRIES = 500

const _isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v)
const _key = (path: string, k: string) =>
  /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? `${path}${path ? '.' : ''}${k}` : `${path}[${JSON.stringify(k)}]`

const _scalarText = (v: unknown): string =>
  Array.isArray(v) ? v.map(_scalarText).join(',') : typeof v === 'string' ? v : JSON.stringify(v)

/** A route's matchers in words: `host=app.example.test path=/api/*`; sets joined by ` | `. */
function _matchText(match: unknown): string {
  if (!Array.isArray(match) || !match.length) return '*'
  return match
    .map((set) =>
      _isObject(set)
        ? Object.keys(set)
            .sort()
            .map((k) => `${k}=${_scalarText(set[k])}`)
            .join(' ')
        : _scalarText(set),
    )
    .join(' | ')
}

/**
 * What an element of a configuration list is, independent of its position: a Caddy `@id`, a
 * handler's name, an upstream's dial address, a TLS policy's subjects, a route's matchers (a
 * route without any matches everything: `*`). Null for anything else (numbers, strings, other
 * objects), whose lists are compared by position.
 */
function _identity(v: unknown): string | null {
  if (!_isObject(v)) return null
  if (typeof v['@id'] === 'string') return `@id=${v['@id']}`
  if (typeof v.handler === 'string') return `handler=${v.handler}`
  if (typeof v.dial === 'string') return `dial=${v.dial}`
  if (Array.isArray(v.subjects)) return `subjects=${_scalarText(v.subjects)}`
  if ('match' in v || 'handle' in v) return _matchText(v.match)
  return null
}

/** A list is keyed when every element has an identity (an empty list is, so it can meet a keyed one). */
const _keyed = (list: unknown[]) => list.every((v) => _identity(v) !== null)

/** Identities made unique in list order: the second `handler=headers` is `handler=headers#2`. */
function _keysOf(list: unknown[]): string[] {
  const seen = new Map<string, number>()
  return list.map((v) => {
    const id = _identity(v)!
    const n = (seen.get(id) ?? 0) + 1
    seen.set(id, n)
    return n === 1 ? id : `${id}#${n}`
  })
}

/**
 * Lists of routes, handlers, upstreams and policies are matched by identity, not position: a handler
 * inserted before others is one "added", not every later handler "changed". A change of order among
 * the elements both sides share is reported once on the list (Caddy evaluates routes in order).
 */
function _walkKeyed(a: unknown[], b: unknown[], path: string, out: ConfigChange[]): void {
  const ka = _keysOf(a),
    kb = _keysOf(b)
  const at = (k: string) => `${path}[${k}]`
  for (let i = 0; i < a.length; i++) if (!kb.includes(ka[i]!)) out.push({ path: at(ka[i]!), change: 'removed', before: a[i] })
  for (let j = 0; j < b.length; j++) {
    const i = ka.indexOf(kb[j]!)
    if (i < 0) out.push({ path: at(kb[j]!), change: 'added', after: b[j] })
    else _walk(a[i], b[j], at(kb[j]!), out)
  }
  const sharedA = ka.filter((k) => kb.includes(k)),
    sharedB = kb.filter((k) => ka.includes(k))
  if (sharedA.join('\n') !== sharedB.join('\n')) out.push({ path: `${path} (order)`, change: 'changed', before: sharedA, after: sharedB })
}

function _walkPositional(a: unknown[], b: unknown[], path: string, out: ConfigChange[]): void {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (i >= b.length) out.push({ path: `${path}[${i}]`, change: 'removed', before: a[i] })
    else if (i >= a.length) out.push({ path: `${path}[${i}]`, change: 'added', after: b[i] })
    else _walk(a[i], b[i], `${path}[${i}]`, out)
  }
}

function _walk(a: unknown, b: unknown, path: string, out: ConfigChange[]): void {
  if (out.length > CONFIG_DIFF_MAX_ENTRIES) return
  if (_isObject(a) && _isObject(b)) {
    for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      if (!(k in b)) out.push({ path: _key(path, k), change: 'removed', before: a[k] })
      else if (!(k in a)) out.push({ path: _key(path, k), change: 'added', after: b[k] })
      else _walk(a[k], b[k], _key(path, k), out)
    }
    return
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (_keyed(a) && _keyed(b)) _walkKeyed(a, b, path, out)
    else _walkPositional(a, b, path, out)
    return
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push({ path: path || '(root)', change: 'changed', before: a, after: b })
}

/** Changes from `before` to `after`; `truncated` when there were more than CONFIG_DIFF_MAX_ENTRIES. */
export function diffConfigs(before: unknown, after: unknown): { changes: ConfigChange[]; truncated: boolean } {
  const out: ConfigChange[] = []
  _walk(before, after, '', out)
  return { changes: out.slice(0, CONFIG_DIFF_MAX_ENTRIES), truncated: out.length > CONFIG_DIFF_MAX_ENTRIES }
}
