import { z } from 'zod'
import { isIpOrCidr } from '../hosts/access-list-schemas'

// Who and where may enter a host (docs/access-control.md). One shape for a host's geo and network
// policy and a path rule's, so the builder, the replay and the UI read the same thing.

/** Continent codes as the MaxMind-format country databases write them (continent.code). */
export const GEO_CONTINENTS = ['AF', 'AN', 'AS', 'EU', 'NA', 'OC', 'SA'] as const
export type GeoContinent = (typeof GEO_CONTINENTS)[number]

const _regions = new Intl.DisplayNames(['en'], { type: 'region' })
// ICU names these two-letter codes, but they are no country a database places an address in.
const _NOT_COUNTRIES = new Set(['EU', 'EZ', 'UN', 'QO', 'XA', 'XB', 'ZZ'])

/** An upper-case ISO 3166-1 alpha-2 code that names a country (lower case is accepted and upper-cased). */
export function isCountryCode(code: string): boolean {
  if (!/^[A-Z]{2}$/.test(code) || _NOT_COUNTRIES.has(code)) return false
  try {
    return _regions.of(code) !== code
  } catch {
    return false
  }
}

const _countryCode = z
  .string()
  .transform((c) => c.trim().toUpperCase())
  .refine(isCountryCode, 'must be an ISO 3166-1 alpha-2 country code such as FR')

/**
 * One rule of a policy: it matches a client whose address is in one of `cidrs` (or in the IP rules
 * of the access list `access_list_id`), or whose country, continent or AS number is listed. At least
 * one selector. First match wins.
 */
export const geoRuleSchema = z
  .strictObject({
    action: z.enum(['allow', 'deny'], { message: 'must be "allow" or "deny"' }),
    countries: z.array(_countryCode).max(250, 'at most 250 countries').default([]),
    continents: z
      .array(z.enum(GEO_CONTINENTS, { message: `must be one of ${GEO_CONTINENTS.join(', ')}` }))
      .max(GEO_CONTINENTS.length)
      .default([]),
    asns: z
      .array(z.number().int('must be an AS number such as 3320').min(1, 'must be an AS number such as 3320').max(4_294_967_295))
      .max(500, 'at most 500 AS numbers')
      .default([]),
    cidrs: z
      .array(z.string().max(64).refine(isIpOrCidr, 'must be an IP address or a CIDR range such as 192.0.2.0/24'))
      .max(500, 'at most 500 addresses or ranges')
      .default([]),
    access_list_id: z.number().int().positive('must be an access list id').nullable().default(null),
  })
  .refine(
    (r) => r.countries.length + r.continents.length + r.asns.length + r.cidrs.length > 0 || r.access_list_id !== null,
    'must name at least one country, continent, AS number, address range or access list',
  )
export type GeoRule = z.output<typeof geoRuleSchema>

/**
 * A host's (or a path rule's) policy. `default` answers a client no rule matched. `unknown_address`
 * answers a client the country database does not place and no rule matched (CIDR and AS rules still apply first):
 * `allow_lan` lets private and loopback ranges in and gives every other unknown address the default;
 * `allow` and `deny` decide for all of them.
 */
export const geoPolicySchema = z.strictObject({
  rules: z.array(geoRuleSchema).max(50, 'at most 50 rules').default([]),
  default: z.enum(['allow', 'deny'], { message: 'must be "allow" or "deny"' }),
  unknown_address: z.enum(['allow_lan', 'allow', 'deny'], { message: 'must be "allow_lan", "allow" or "deny"' }).default('allow_lan'),
})
export type GeoPolicy = z.output<typeof geoPolicySchema>

/** A panel-local group name (users.groups, hosts.auth_allowed_groups); OIDC groups arrive as their claim gives them. */
export const groupNameSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .regex(/^[^\u0000-\u001f\u007f,]+$/, 'must not contain commas or control characters')

/** Who may enter a protected host: both lists empty means any signed-in user (the default, and every existing host). */
export const hostIdentityFields = {
  auth_allowed_users: z
    .array(z.number().int().positive('must be a user id'))
    .max(500, 'at most 500 users')
    .refine((a) => new Set(a).size === a.length, 'must not repeat a user')
    .optional(),
  auth_allowed_groups: z
    .array(groupNameSchema)
    .max(100, 'at most 100 groups')
    .refine((a) => new Set(a).size === a.length, 'must not repeat a group')
    .optional(),
}
