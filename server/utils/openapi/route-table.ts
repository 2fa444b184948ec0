import type { H3Event } from 'h3'
import type { ZodType } from 'zod'
import type { Access, OperationDoc } from './registry'
import { listOperations } from './document'

// The documented routes as a table the request path is matched against before
// Nitro's router sees it (server/middleware/30-routes.ts). Nitro decodes a
// path before routing, so `/api/users/%3F` would reach the collection route
// (`?` starts a query) and `/api/hosts/%3F/toggle` the create route; here every
// segment is matched encoded, and a path parameter is decoded and checked
// against the schema its operation declares. The registry knows every path and
// method, so a method a path does not serve is answered 405 with Allow.

interface TableEntry {
  template: string
  segments: string[]
  staticSegments: number
  methods: Map<string, { access: Access; params: Record<string, { schema: ZodType; description?: string }>; query: Set<string> | 'any' }>
}

/**
 * A documented or bad-parameter match names the operation's access; a method the path does not
 * serve names the access of the methods it does (the access layer decides who may learn that).
 */
export type RouteMatch =
  | { kind: 'documented'; access: Access }
  | { kind: 'no-route' }
  | { kind: 'method-not-allowed'; allow: string; served: Access[] }
  | { kind: 'bad-parameter'; message: string; access: Access }

let _table: TableEntry[] | undefined

/**
 * The query parameters an operation takes: the names of its strict query object, or any
 * (ForwardAuth gets the original request's query from the proxy, whose rewrite keeps it;
 * an identity provider may add parameters to the OIDC redirects, whose query objects are not strict).
 */
function _queryNamesOf(op: OperationDoc): Set<string> | 'any' {
  if (op.access === 'proxy') return 'any'
  if (!op.query) return new Set()
  return (op.query.def.catchall as ZodType | undefined)?.def.type === 'never' ? new Set(Object.keys(op.query.shape)) : 'any'
}

function _buildTable(): TableEntry[] {
  const byTemplate = new Map<string, TableEntry>()
  for (const op of listOperations()) {
    const segments = op.path.split('/')
    const entry = byTemplate.get(op.path) ?? {
      template: op.path,
      segments,
      staticSegments: segments.filter((s) => !s.startsWith('{')).length,
      methods: new Map(),
    }
    const params = op.params ?? {}
    for (const s of segments.filter((x) => x.startsWith('{'))) {
      if (!params[s.slice(1, -1)]) throw new Error(`OpenAPI registry: ${op.method.toUpperCase()} ${op.path} declares no schema for ${s}`)
    }
    // `session` admits read-scope tokens and viewers, which never change anything.
    if (op.access === 'session' && op.method !== 'get')
      throw new Error(`OpenAPI registry: ${op.method.toUpperCase()} ${op.path} is a mutation declared 'session'; declare who may change it`)
    entry.methods.set(op.method.toUpperCase(), { access: op.access, params, query: _queryNamesOf(op) })
    byTemplate.set(op.path, entry)
  }
  // A static segment wins over a parameter: /api/logs/stats before /api/logs/{id}.
  return [...byTemplate.values()].sort((a, b) => b.staticSegments - a.staticSegments)
}

function _matches(entry: TableEntry, raw: string[]): boolean {
  return entry.segments.length === raw.length && entry.segments.every((s, i) => (s.startsWith('{') ? raw[i] !== '' : s === raw[i]))
}

/** The name an operator knows a parameter by: its description up to a comma or parenthesis ("user id"), else its name. */
function _label(name: string, description: string | undefined): string {
  return description?.split(/[,(]/)[0]?.trim() || name
}

/** Control characters, and the characters that would end a segment once decoded (a query, a fragment). */
const _NEVER_IN_PARAMETER = /[?#\u0000-\u001f\u007f]/

function _checkParameter(name: string, encoded: string, param: { schema: ZodType; description?: string }): string | null {
  let value: string
  try {
    value = decodeURIComponent(encoded)
  } catch {
    return `${_label(name, param.description)}: is not valid percent-encoding`
  }
  if (_NEVER_IN_PARAMETER.test(value)) return `${_label(name, param.description)}: must not contain ?, # or control characters`
  const parsed = param.schema.safeParse(value)
  if (parsed.success) return null
  return `${_label(name, param.description)}: ${parsed.error.issues[0]!.message}`
}

/**
 * What the document says of `method` on `path` (the raw request path, still
 * percent-encoded, query included). HEAD is served wherever GET is.
 */
export function matchDocumentedRoute(method: string, path: string): RouteMatch {
  const [pathPart, query] = [path.split('?')[0]!, path.split('?').slice(1).join('?')]
  const raw = pathPart.split('/')
  const entry = (_table ??= _buildTable()).find((e) => _matches(e, raw))
  if (!entry) return { kind: 'no-route' }
  const served = entry.methods.get(method === 'HEAD' ? 'GET' : method)
  if (!served) {
    const allow = [...entry.methods.keys()]
    if (allow.includes('GET')) allow.push('HEAD')
    return { kind: 'method-not-allowed', allow: allow.join(', '), served: [...entry.methods.values()].map((m) => m.access) }
  }
  for (const [i, segment] of entry.segments.entries()) {
    if (!segment.startsWith('{')) continue
    const name = segment.slice(1, -1)
    const problem = _checkParameter(name, raw[i]!, served.params[name]!)
    if (problem) return { kind: 'bad-parameter', message: problem, access: served.access }
  }
  // A parameter the operation does not declare is refused like an unknown body field.
  const takes = served.query
  const stray = takes === 'any' ? undefined : [...new URLSearchParams(query).keys()].find((k) => !takes.has(k))
  if (stray !== undefined) {
    const known = takes === 'any' || takes.size === 0 ? 'takes none' : `takes ${[...takes].join(', ')}`
    return {
      kind: 'bad-parameter',
      access: served.access,
      message: `query: unknown parameter "${stray.slice(0, 64)}"; ${method} ${entry.template} ${known}`,
    }
  }
  return { kind: 'documented', access: served.access }
}

/**
 * The match of this request, computed once: the access layer (10-auth) needs it before the
 * route layer (30-routes) answers it. h3 has already decoded event.path (but %2F), so the
 * request line as sent is matched.
 */
export function routeMatchOf(event: H3Event): RouteMatch {
  const cached = event.context.routeMatch as RouteMatch | undefined
  if (cached) return cached
  const match = matchDocumentedRoute(event.method, event.node.req.originalUrl ?? event.node.req.url ?? event.path)
  event.context.routeMatch = match
  return match
}
