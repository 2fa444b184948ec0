import { z } from 'zod'

// OIDC groups to roles (issue 38 item 4, docs/access-control.md "OIDC groups to roles").
// The groups come from one claim of the verified id_token (oidc.groups_claim); a mapping
// (oidc.group_roles) turns them into a role or a refusal, and a list (oidc.allowed_groups)
// says who may sign in to the panel at all. Pure functions: oidc.ts applies the decision.

export const OIDC_GROUP_ROLES = ['admin', 'viewer', 'none'] as const
export type OidcGroupRole = (typeof OIDC_GROUP_ROLES)[number]

/** At most this many groups are read from the claim (an IdP sending more is cut, never refused). */
export const OIDC_GROUPS_MAX = 500
const _GROUPS_MAX_ENTRIES = 200

/** The claim's name: plain (`groups`, `https://example.com/groups`) or a dotted path (`realm_access.roles`). */
export const groupsClaimSchema = z
  .string()
  .trim()
  .min(1, 'must name the claim that carries the groups, such as groups')
  .max(200, 'must be at most 200 characters')
  .regex(/^[^\u0000-\u001f\u007f\s]+$/, 'must be one claim name without spaces or control characters')

// The rule of groupNameSchema (access/schemas.ts: a host's allowed groups), restated because the
// settings catalogue imports this module and access/schemas.ts reaches the catalogue: a group
// named here is one a protected host can name too.
const _groupName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .regex(/^[^\u0000-\u001f\u007f,]+$/, 'must not contain commas or control characters')

export const groupRolesSchema = z
  .record(z.string(), z.enum(OIDC_GROUP_ROLES, { message: 'must be admin, viewer or none' }))
  .superRefine((m, ctx) => {
    const keys = Object.keys(m)
    if (keys.length > _GROUPS_MAX_ENTRIES) ctx.addIssue({ code: 'custom', message: `must map at most ${_GROUPS_MAX_ENTRIES} groups` })
    // Each group named in the operator's words: the record's own key error says only "Invalid key".
    for (const k of keys) {
      const problem = k !== k.trim() ? 'must not start or end with a space' : _groupName.safeParse(k).error?.issues[0]?.message
      if (problem) ctx.addIssue({ code: 'custom', message: `group ${JSON.stringify(k.slice(0, 100))} ${problem}` })
    }
  })

export const allowedGroupsSchema = z
  .array(_groupName)
  .max(_GROUPS_MAX_ENTRIES, `must list at most ${_GROUPS_MAX_ENTRIES} groups`)
  .refine((a) => new Set(a).size === a.length, 'must not repeat a group')

function _claimValue(claims: Record<string, unknown>, claimName: string): unknown {
  // A name with dots is first taken whole (Auth0's namespaced claims are URLs), then as a path.
  if (Object.hasOwn(claims, claimName)) return claims[claimName]
  if (!claimName.includes('.')) return undefined
  let v: unknown = claims
  for (const part of claimName.split('.')) {
    if (!v || typeof v !== 'object' || Array.isArray(v) || !Object.hasOwn(v, part)) return undefined
    v = (v as Record<string, unknown>)[part]
  }
  return v
}

/**
 * The groups the verified claims carry: a string is one group, a list gives its strings (other
 * values are skipped); control characters stripped, blanks and repeats dropped, each at most 256
 * characters, at most OIDC_GROUPS_MAX. A missing claim is no groups.
 */
export function groupsOfClaims(claims: Record<string, unknown>, claimName: string): string[] {
  const v = _claimValue(claims, claimName)
  const list = typeof v === 'string' ? [v] : Array.isArray(v) ? v : []
  const out = new Set<string>()
  for (const g of list) {
    if (typeof g !== 'string') continue
    const clean = g
      .replace(/[\u0000-\u001f\u007f]/g, '')
      .trim()
      .slice(0, 256)
    if (clean) out.add(clean)
    if (out.size >= OIDC_GROUPS_MAX) break
  }
  return [...out]
}

export type OidcAccessDecision =
  /** `role` null: no mapping is configured, the user's stored role stays (today's behaviour). */
  | { allowed: true; role: 'admin' | 'viewer' | null; matched: string[] }
  | { allowed: false; code: 'group_not_allowed' | 'group_refused'; matched: string[] }

/**
 * Precedence: a group mapped to `none` refuses (it beats every other group); then, when the
 * allowed list is not empty, a user in none of its groups is refused; then `admin` beats
 * `viewer`; a user whose groups the mapping does not name is a viewer. Names match exactly
 * (case and all), as the IdP sends them.
 */
export function decideOidcAccess(
  groups: string[],
  policy: { groupRoles: Record<string, OidcGroupRole>; allowedGroups: string[] },
): OidcAccessDecision {
  const mapped = groups.filter((g) => Object.hasOwn(policy.groupRoles, g))
  const refusing = mapped.filter((g) => policy.groupRoles[g] === 'none')
  if (refusing.length) return { allowed: false, code: 'group_refused', matched: refusing }
  if (policy.allowedGroups.length && !groups.some((g) => policy.allowedGroups.includes(g)))
    return { allowed: false, code: 'group_not_allowed', matched: [] }
  if (!Object.keys(policy.groupRoles).length) return { allowed: true, role: null, matched: [] }
  const admins = mapped.filter((g) => policy.groupRoles[g] === 'admin')
  if (admins.length) return { allowed: true, role: 'admin', matched: admins }
  return { allowed: true, role: 'viewer', matched: mapped }
}
