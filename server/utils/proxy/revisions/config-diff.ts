// Pure: the differences between two proxy configurations as JSON paths, for
// revision diffs and dry runs. Both sides are redacted before they get here.

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
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (i >= b.length) out.push({ path: `${path}[${i}]`, change: 'removed', before: a[i] })
      else if (i >= a.length) out.push({ path: `${path}[${i}]`, change: 'added', after: b[i] })
      else _walk(a[i], b[i], `${path}[${i}]`, out)
    }
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
