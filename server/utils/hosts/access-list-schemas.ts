import { isIP } from 'node:net'
import { z } from 'zod'
import { UNCHANGED } from '../core/settings'
import { safeText } from '../core/validate'

// Request shapes of access lists (docs/access-lists.md). Everything here ends
// up in the proxy configuration or in a WWW-Authenticate header, so characters
// Caddy or the header would interpret are refused rather than escaped.

/** An IPv4 or IPv6 address, or a CIDR range of either. */
export function isIpOrCidr(value: string): boolean {
  const [address, bits, extra] = value.split('/')
  if (extra !== undefined || !address) return false
  const family = isIP(address)
  if (!family) return false
  if (bits === undefined) return true
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128)
}

/** bcrypt in its Modular Crypt Format, as Caddy and htpasswd write it. */
export const BCRYPT_HASH = /^\$2[abxy]\$\d{2}\$[./A-Za-z0-9]{53}$/

/** bcrypt reads at most 72 bytes of a password; a longer one would be silently cut. */
export const BASIC_AUTH_PASSWORD_MAX_BYTES = 72
export const BASIC_AUTH_USERNAME = /^[A-Za-z0-9._@+-]{1,64}$/

const _password = z
  .string()
  .min(8, 'must be at least 8 characters')
  .refine(
    (p) => Buffer.byteLength(p, 'utf8') <= BASIC_AUTH_PASSWORD_MAX_BYTES,
    `must be at most ${BASIC_AUTH_PASSWORD_MAX_BYTES} bytes (bcrypt reads no more)`,
  )
  .refine((p) => !/[\u0000-\u001f\u007f]/.test(p), 'must not contain control characters')

export const accessListBody = z.strictObject({
  name: safeText(100).pipe(z.string().trim().min(1, 'must not be empty')),
  realm: z
    .string()
    .regex(/^[A-Za-z0-9 ._-]{1,64}$/, 'must be 1-64 letters, digits, spaces, dots, hyphens or underscores')
    .default('restricted'),
  default_action: z
    .enum(['allow', 'deny'], { message: 'must be "allow" or "deny" (what a source that no rule matches gets)' })
    .default('allow'),
  ip_rules: z
    .array(
      z.strictObject({
        action: z.enum(['allow', 'deny'], { message: 'must be "allow" or "deny"' }),
        source: z
          .string()
          .trim()
          .toLowerCase()
          .refine(isIpOrCidr, 'must be an IP address or a CIDR range such as 198.51.100.0/24 or 2001:db8::/32'),
      }),
    )
    .max(500, 'at most 500 rules')
    .default([]),
  users: z
    .array(
      z.strictObject({
        username: z.string().regex(BASIC_AUTH_USERNAME, 'must be 1-64 letters, digits or . _ @ + -'),
        /** Left out or "__UNCHANGED__": the stored password of that user stays. */
        password: z.union([z.literal(UNCHANGED), _password]).optional(),
      }),
    )
    .max(200, 'at most 200 users')
    .default([])
    .refine((u) => new Set(u.map((x) => x.username)).size === u.length, 'must not repeat a username'),
})
export type AccessListInput = z.infer<typeof accessListBody>

export const hostAccessListBody = z.strictObject({
  access_list_id: z.union([z.number().int().positive('must be an access list id'), z.null()]),
})
