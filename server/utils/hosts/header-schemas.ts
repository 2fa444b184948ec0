import { z } from 'zod'

// Header rules of a host (docs/hosts.md, "Header rules"): presets (HSTS, security
// headers, a CSP) and free rules that set, add or remove request headers to the
// upstream and response headers to the client. Anything the proxy would interpret
// (placeholders in braces, control characters) is refused here.

/** RFC 7230 token: the characters a header name may hold. */
const _TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
/** Hop-by-hop and framing headers: they describe one connection, not the message. */
export const HOP_BY_HOP_HEADERS = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
]
/** Request headers the panel or the proxy sets itself: a rule could forge an identity or a client address. */
const _PANEL_REQUEST_HEADERS = ['host', 'cookie', 'forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-real-ip']
/** Response headers a preset writes: set them with the switch, not with a rule. */
const _PRESET_RESPONSE_HEADERS = ['strict-transport-security', 'content-security-policy', 'content-security-policy-report-only']

function _headerNameProblem(name: string, direction: 'request' | 'response'): string | null {
  const n = name.toLowerCase()
  if (HOP_BY_HOP_HEADERS.includes(n)) return `${name} is a hop-by-hop header of one connection; the proxy manages it`
  if (n.startsWith('x-auth-')) return `${name}: the X-Auth-* headers carry the signed-in user's identity and are set by the panel only`
  if (direction === 'request' && n === 'host') return 'Host: use upstream_host to send another Host to the upstream'
  if (direction === 'request' && _PANEL_REQUEST_HEADERS.includes(n))
    return `${name} is set by the proxy (client address, forwarding, the panel's cookie removal) and cannot be changed by a rule`
  if (direction === 'response' && _PRESET_RESPONSE_HEADERS.includes(n)) return `${name}: use the HSTS or CSP switch of the host instead`
  return null
}

const _headerName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(64, 'must be at most 64 characters')
  .regex(_TOKEN, "must be a header name such as X-Frame-Options (letters, digits and - _ . ! # $ % & ' * + ^ ` | ~)")

/** A header value: printable text, no braces (the proxy would read them as placeholders). */
export const headerValueSchema = (max: number) =>
  z
    .string()
    .max(max, `must be at most ${max} characters`)
    .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters (a header value is one line)')
    .regex(/^[^{}]*$/, 'must not contain { or } (the proxy would read them as placeholders)')
    .refine((v) => v.trim() === v, 'must not start or end with spaces')

export const headerRuleSchema = z
  .strictObject({
    direction: z.enum(['request', 'response'], {
      message: 'must be "request" (sent to the upstream) or "response" (sent to the client)',
    }),
    action: z.enum(['set', 'add', 'remove'], { message: 'must be "set" (replace), "add" (one more value) or "remove"' }),
    name: _headerName,
    value: headerValueSchema(2048).nullable().default(null),
  })
  .superRefine((r, ctx) => {
    const problem = _headerNameProblem(r.name, r.direction)
    if (problem) ctx.addIssue({ code: 'custom', path: ['name'], message: `is refused: ${problem}` })
    if (r.action === 'remove' && r.value !== null)
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'must be null when the action is "remove"' })
    if (r.action !== 'remove' && !r.value)
      ctx.addIssue({ code: 'custom', path: ['value'], message: `is required when the action is "${r.action}"` })
  })
export type HeaderRule = z.output<typeof headerRuleSchema>

/** The preload list's requirements (hstspreload.org): one year at least, subdomains included. */
export const HSTS_PRELOAD_MIN_AGE = 31_536_000
export const hstsSchema = z
  .strictObject({
    max_age: z
      .number()
      .int('must be a whole number of seconds')
      .min(0, 'must not be negative')
      .max(63_072_000, 'must be at most 63072000 (two years)'),
    include_subdomains: z.boolean().default(false),
    preload: z.boolean().default(false),
  })
  .superRefine((h, ctx) => {
    if (!h.preload) return
    if (!h.include_subdomains)
      ctx.addIssue({ code: 'custom', path: ['include_subdomains'], message: 'must be true with preload (the preload list requires it)' })
    if (h.max_age < HSTS_PRELOAD_MIN_AGE)
      ctx.addIssue({
        code: 'custom',
        path: ['max_age'],
        message: `must be at least ${HSTS_PRELOAD_MIN_AGE} (one year) with preload (the preload list requires it)`,
      })
  })

export const cspSchema = z.strictObject({
  mode: z.enum(['enforce', 'report-only'], { message: 'must be "enforce" or "report-only" (reports violations, blocks nothing)' }),
  policy: headerValueSchema(4096).min(1, "must not be empty, such as default-src 'self'"),
})

const _LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?'
const _UPSTREAM_HOST = new RegExp(`^(?=.{1,253}(:|$))${_LABEL}(?:\\.${_LABEL})*(?::\\d{1,5})?$`)

/** Left out of a PUT: the stored value stays; on create: nothing (no header handler). */
export const headerFields = {
  header_rules: z.array(headerRuleSchema).max(50, 'at most 50 header rules').optional(),
  upstream_host: z
    .string()
    .trim()
    .toLowerCase()
    .max(260, 'must be at most 260 characters')
    .regex(_UPSTREAM_HOST, 'must be a host name with an optional port, such as app.internal or app.internal:8080')
    .nullable()
    .optional(),
  hsts: hstsSchema.nullable().optional(),
  security_headers: z.boolean().optional(),
  csp: cspSchema.nullable().optional(),
}
