import { z } from 'zod'
import { safeText, urlSchema } from '../core/validate'
import { isIpOrCidr } from './access-list-schemas'

// The request fields of host kinds (docs/hosts.md, "Host kinds"): what answers at
// the end of a host's chain. Checks that need more than one field (a proxy host
// needs a target group, ...) are in hosts/kinds.ts, on the resolved fields.

export const HOST_KINDS = ['proxy', 'redirect', 'static', 'maintenance'] as const
export type HostKind = (typeof HOST_KINDS)[number]
export const REDIRECT_STATUSES = [301, 302, 303, 307, 308] as const
/** The largest page a static or maintenance host answers with (bytes of UTF-8): it lives in the pushed configuration. */
export const PAGE_BODY_MAX_BYTES = 65_536

const _LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?'
const _PLAIN_HOSTNAME = new RegExp(`^(?=.{1,253}$)${_LABEL}(?:\\.${_LABEL})*$`)
const _URL_WORDS = 'must be an http(s) URL such as https://www.example.com/ or a host name such as www.example.com'

/** A redirect target: an absolute http(s) URL, or a bare host name (the request's scheme is kept). */
export const redirectTargetSchema = z
  .string()
  .trim()
  .max(2048, 'must be at most 2048 characters')
  .refine(
    (v) => (/^https?:\/\//i.test(v) ? urlSchema().safeParse(v).success : _PLAIN_HOSTNAME.test(v.toLowerCase())),
    `${_URL_WORDS} (no spaces, quotes, angle brackets, backslashes, braces or control characters)`,
  )

const _contentType = z
  .string()
  .trim()
  .toLowerCase()
  .regex(
    /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(; ?charset=[a-z0-9_-]{1,40})?$/,
    'must be a media type such as text/html or text/plain; charset=utf-8',
  )

const _pageBody = safeText(PAGE_BODY_MAX_BYTES, { multiline: true }).refine(
  (b) => Buffer.byteLength(b, 'utf8') <= PAGE_BODY_MAX_BYTES,
  `must be at most ${PAGE_BODY_MAX_BYTES / 1024} KiB`,
)

/** Left out of a PUT: the stored value stays; on create: HOST_KIND_DEFAULTS. */
export const hostKindFields = {
  kind: z
    .enum(HOST_KINDS, { message: 'must be "proxy", "redirect", "static" or "maintenance"' })
    .optional()
    .describe('what answers at the end of the chain; "proxy" (the default) forwards to the target group'),
  redirect_to: redirectTargetSchema.nullable().optional().describe('kind "redirect": an http(s) URL or a host name'),
  redirect_status: z
    .union([z.literal(301), z.literal(302), z.literal(303), z.literal(307), z.literal(308)], {
      message: 'must be 301, 302, 303, 307 or 308',
    })
    .optional(),
  redirect_keep_path: z
    .boolean({ message: 'must be true or false' })
    .optional()
    .describe('kind "redirect": append the request\'s path and query to the target'),
  static_status: z.number().int('must be an integer').min(200, 'must be at least 200').max(599, 'must be at most 599').optional(),
  static_content_type: _contentType.optional(),
  static_body: _pageBody.optional(),
  maintenance_retry_after: z
    .number()
    .int('must be an integer (seconds)')
    .min(1, 'must be at least 1 (seconds)')
    .max(604_800, 'must be at most 604800 (seconds, one week)')
    .optional(),
  maintenance_content_type: _contentType.optional(),
  maintenance_body: _pageBody.optional(),
  maintenance_bypass: z
    .array(
      z.string().trim().toLowerCase().refine(isIpOrCidr, 'must be an IP address or a CIDR range such as 198.51.100.0/24 or 2001:db8::/32'),
    )
    .max(100, 'at most 100 addresses or ranges')
    .refine((a) => new Set(a).size === a.length, 'must not repeat an address or range')
    .optional()
    .describe('kind "maintenance": sources that still reach the target group'),
}

export const HOST_KIND_DEFAULTS = {
  kind: 'proxy' as HostKind,
  redirect_to: null as string | null,
  redirect_status: 302 as (typeof REDIRECT_STATUSES)[number],
  redirect_keep_path: true,
  static_status: 200,
  static_content_type: 'text/plain; charset=utf-8',
  static_body: '',
  maintenance_retry_after: 300,
  maintenance_content_type: 'text/plain; charset=utf-8',
  maintenance_body: 'This site is down for maintenance. Please try again later.',
  maintenance_bypass: [] as string[],
}
