import { getRequestHeader, type H3Event } from 'h3'
import { z, type ZodType } from 'zod'
import { jsonContentTypeProblem } from './content-type'
import { readBoundedBody } from './body'
import { badRequest, unsupportedMediaType } from './errors'

/** How deep arrays and objects may nest in a JSON body; no route's schema comes near it. */
export const MAX_JSON_DEPTH = 64

/**
 * "field.path: problem" for the first issue, in words an operator can act on. Every validation
 * message has this one form (docs/api.md, Errors), `root` (body, query) standing for the whole
 * value, so that the UI finds the field with one function (ui/src/fields.ts, parseFieldError).
 */
export function describeZodError(error: z.ZodError, root = 'body'): string {
  const issue = error.issues[0]!
  const path = issue.path.length ? issue.path.join('.') : root
  if (issue.code === 'unrecognized_keys')
    return `${path}: unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`
  if (issue.code === 'invalid_type' && /received undefined/.test(issue.message)) return `${path}: is required`
  return `${path}: ${issue.message}`
}

export function parseWith<T>(schema: ZodType<T>, value: unknown, root = 'body'): T {
  const r = schema.safeParse(value)
  if (!r.success) throw badRequest(describeZodError(r.error, root))
  return r.data
}

/** Keys that would reach an object's prototype when a body is merged or spread: refused, never stripped. */
const _PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype'])
/** NUL, the other C0 controls and DEL; tab and newline are left to the field's own type (multi-line text allows them). */
const _CONTROL_EXCEPT_TAB_NEWLINE = /[\u0000-\u0008\u000b-\u001f\u007f]/

function _where(path: Array<string | number>, root: string): string {
  return path.length ? path.join('.') : root
}

/**
 * What every JSON body must satisfy before its schema sees it, checked on the
 * parsed value (zod would strip a __proto__ key silently, and a NUL would be cut
 * off by the database): no prototype keys and no control characters at any depth.
 */
export function assertCleanJson(value: unknown, path: Array<string | number> = [], root = 'body'): void {
  // Recursion bounded: a value parsed elsewhere than decodeJsonBody (a query) gets the same limit.
  if (path.length > MAX_JSON_DEPTH) throw badRequest(`${root}: nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`)
  if (typeof value === 'string') {
    if (_CONTROL_EXCEPT_TAB_NEWLINE.test(value))
      throw badRequest(`${_where(path, root)}: must not contain control characters (NUL, U+0001-U+001F except tab and newline, DEL)`)
    return
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => assertCleanJson(item, [...path, i], root))
    return
  }
  if (!value || typeof value !== 'object') return
  for (const [key, item] of Object.entries(value)) {
    if (_PROTOTYPE_KEYS.has(key)) throw badRequest(`${_where(path, root)}: the key "${key}" is not allowed`)
    if (_CONTROL_EXCEPT_TAB_NEWLINE.test(key)) throw badRequest(`${_where(path, root)}: a key must not contain control characters`)
    assertCleanJson(item, [...path, key], root)
  }
}

const _utf8 = new TextDecoder('utf-8', { fatal: true })

/** Bytes as UTF-8 text: invalid bytes are a 400 naming `what`, never replaced by U+FFFD and stored. */
export function decodeUtf8(raw: Uint8Array, what: string): string {
  try {
    return _utf8.decode(raw)
  } catch {
    throw badRequest(`${what}: is not valid UTF-8; send it encoded as UTF-8`)
  }
}

/**
 * Whether JSON text nests arrays and objects deeper than `max`, by one pass over its characters.
 * Checked before JSON.parse: every later walk of the value (assertCleanJson, the schema) recurses,
 * and a 1 MB body of brackets would overflow the stack there.
 */
export function jsonNestsDeeperThan(text: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c)
        i++ // a backslash: the next character is escaped
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

/** Decodes and parses a JSON body, then refuses prototype keys and control characters (assertCleanJson). */
export function decodeJsonBody(raw: Uint8Array): unknown {
  const text = decodeUtf8(raw, 'body')
  if (jsonNestsDeeperThan(text, MAX_JSON_DEPTH))
    throw badRequest(`body: nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects; send a flatter document`)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw badRequest('body: is not valid JSON; send one JSON object')
  }
  assertCleanJson(value)
  return value
}

/**
 * Reads a JSON body (within the route's limit, server/utils/core/body.ts; Content-Type application/json) and
 * validates it; every failure is a 4xx with {error}. The body is required, as the document says of every JSON
 * body: `{}` where every field is optional.
 */
export async function readValidatedJson<T>(event: H3Event, schema: ZodType<T>): Promise<T> {
  // Checked before the body is read: a JSON route takes nothing else (415), not even a body without a type.
  const typeProblem = jsonContentTypeProblem(getRequestHeader(event, 'content-type'))
  if (typeProblem) throw unsupportedMediaType(typeProblem)
  const raw = await readBoundedBody(event)
  if (!raw?.length) throw badRequest('body: is required; send a JSON object ({} where every field is optional)')
  return parseWith(schema, decodeJsonBody(raw))
}

/** A query string's parameters (already decoded by h3), checked like a body: text without control characters. */
export function parseQueryWith<T>(schema: ZodType<T>, query: Record<string, unknown>): T {
  assertCleanJson(query, [], 'query')
  return parseWith(schema, query, 'query')
}

export function parseIdParam(value: string | undefined, kind = 'id'): number {
  if (!value || !/^[1-9]\d{0,15}$/.test(value)) throw badRequest(`${kind}: must be a positive integer`)
  return Number(value)
}

const _NO_CONTROL = /^[^\u0000-\u001f\u007f]*$/
const _NO_CONTROL_EXCEPT_TAB_NEWLINE = /^[^\u0000-\u0008\u000b-\u001f\u007f]*$/

/**
 * The one text type: bounded, no NUL, C0 control or DEL; `multiline` allows tab
 * and newline. Patterns (not refinements) so that the OpenAPI document carries them.
 */
export const safeText = (max: number, options: { multiline?: boolean; min?: number } = {}) => {
  const base = z.string().max(max, `must be at most ${max} characters`)
  const bounded = options.min
    ? base.min(options.min, options.min === 1 ? 'must not be empty' : `must be at least ${options.min} characters`)
    : base
  return options.multiline
    ? bounded.regex(_NO_CONTROL_EXCEPT_TAB_NEWLINE, 'must not contain control characters (tab and newline are allowed)')
    : bounded.regex(_NO_CONTROL, 'must not contain control characters')
}

/** One email rule: lower-cased, no spaces, quotes, angle brackets, backslashes or control characters, a dot in the domain. */
export const emailSchema = z
  .string()
  .trim()
  .toLowerCase()
  .max(254, 'must be at most 254 characters')
  .regex(
    /^[^\s@"'<>\\\u0000-\u001f\u007f]+@[^\s@"'<>\\\u0000-\u001f\u007f]+\.[^\s@"'<>\\\u0000-\u001f\u007f]+$/,
    'must be a valid email address',
  )
  .meta({ format: 'email' })

function _parsesAs(value: string, schemes: readonly string[]): boolean {
  try {
    return schemes.includes(new URL(value).protocol.slice(0, -1))
  } catch {
    return false
  }
}

/**
 * One URL rule: parsed by the WHATWG URL parser (what fetch and the proxy will
 * see), scheme checked, no whitespace, quotes, angle brackets, backslashes,
 * braces (proxy placeholders) or control characters.
 */
export const urlSchema = (options: { schemes?: readonly ['http' | 'https', ...Array<'http' | 'https'>]; max?: number } = {}) => {
  const schemes = options.schemes ?? ['http', 'https']
  const words = schemes.length === 1 ? `an ${schemes[0]}:// URL` : 'an http(s) URL'
  return z
    .string()
    .trim()
    .max(options.max ?? 2048, `must be at most ${options.max ?? 2048} characters`)
    .regex(new RegExp(`^(${schemes.join('|')})://[^\\s"'<>\\\\{}\\u0000-\\u001f\\u007f]+$`), `must be ${words}`)
    .refine((v) => _parsesAs(v, schemes), `must be ${words}`)
    .meta({ format: 'uri' })
}

/**
 * The characters of an IP address or a CIDR, as a pattern the document carries;
 * the domain parses the value itself (node:net) and names what is wrong.
 */
export const ipOrCidrText = (options: { cidr?: boolean } = { cidr: true }) =>
  z
    .string()
    .trim()
    .max(64, 'must be at most 64 characters')
    .regex(
      options.cidr ? /^[0-9A-Fa-f:.]{2,45}(\/\d{1,3})?$/ : /^[0-9A-Fa-f:.]{2,45}$/,
      options.cidr ? 'must be an IP address or a CIDR such as 192.0.2.0/24' : 'must be an IPv4 or IPv6 address',
    )

const _GO_DURATION_UNITS_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/**
 * A Go duration ("15s", "1m30s", "1.5h", or "-2s" as the local API words an
 * expired decision's time left) in milliseconds; null when Go would not parse it the same way.
 */
export function parseGoDurationMs(text: string): number | null {
  const sign = text.startsWith('-') ? -1 : 1
  const body = sign < 0 ? text.slice(1) : text
  if (!/^(\d+(\.\d+)?(ns|us|µs|μs|ms|s|m|h))+$/.test(body)) return null
  let total = 0
  for (const [, value, unit] of body.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|μs|ms|s|m|h)/g))
    total += Number(value) * _GO_DURATION_UNITS_MS[unit!]!
  return sign * total
}
