import { geoPolicySchema, hostIdentityFields } from '../access/schemas'
import { isIP } from 'node:net'
import { errorPageMessageField } from './page-message'
import { z } from 'zod'
import { emailSchema, safeText, urlSchema } from '../core/validate'
import { DNS_PROVIDER_CATALOGUE } from './dns-catalogue'
import { headerFields, headerRuleSchema } from './header-schemas'
import { HOST_KIND_DEFAULTS, hostKindFields } from './kind-schemas'
import {
  CONTENT_TYPE_PATTERN,
  WAF_CONTROL_RULE_RANGE,
  WAF_DEFAULT_FAMILIES,
  WAF_EXCLUSION_ARGUMENT,
  WAF_EXCLUSION_PATH,
  WAF_FAMILY_IDS,
  WAF_LIMIT_ACTIONS,
  WAF_LIMIT_BOUNDS,
  WAF_PROFILES,
} from '../proxy/build/waf-rules'
import { CUSTOM_HANDLER_POINTS, customHandlersProblem } from '../proxy/build/custom-handlers'

// Request shapes for hosts, target groups and rules. Anything that would be
// interpreted by the proxy (quotes, braces, whitespace, placeholders) is refused
// here rather than escaped into the configuration.

const _LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?'
const _HOSTNAME = new RegExp(`^(?=.{1,253}$)${_LABEL}(?:\\.${_LABEL})*$`)

export function isValidHostname(name: string): boolean {
  return _HOSTNAME.test(name)
}

/** A host name, or a wildcard `*.example.com` (certificates for those need DNS-01). */
export function isValidHostPattern(name: string): boolean {
  return name.startsWith('*.') ? name.split('.').length >= 3 && _HOSTNAME.test(name.slice(2)) : _HOSTNAME.test(name)
}

// The same name as a case-insensitive pattern, for the document (the server lower-cases first).
const _LABEL_ANY_CASE = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?'
const _HOST_PATTERN = new RegExp(`^(?:\\*\\.)?(?=.{1,253}$)${_LABEL_ANY_CASE}(?:\\.${_LABEL_ANY_CASE})*$`)

export const hostnameSchema = z
  .string()
  .trim()
  .toLowerCase()
  .max(255, 'must be at most 255 characters')
  .regex(_HOST_PATTERN, 'must be a valid hostname such as app.example.com or *.example.com (letters, digits, hyphens and dots only)')
  .refine(isValidHostPattern, 'must be a valid hostname such as app.example.com or *.example.com (letters, digits, hyphens and dots only)')

/** A DNS provider of the catalogue (GET /api/dns-providers), where a body names one. */
export const dnsProviderNameSchema = z.enum(DNS_PROVIDER_CATALOGUE.map((p) => p.name) as [string, ...string[]], {
  message: `is not in the catalogue; use ${DNS_PROVIDER_CATALOGUE.map((p) => p.name).join(', ')}`,
})

/**
 * The path parameter of /api/dns-providers/{name}: any well-formed catalogue name, so that a name
 * the catalogue does not hold is a missing row (404, naming the catalogue), not a malformed one.
 */
export const dnsProviderNameParam = z
  .string()
  .max(64, 'must be at most 64 characters')
  .regex(/^[a-z][a-z0-9_]*$/, 'must be a catalogue name such as provider_a (lower-case letters, digits and _)')

const _optionalBool = z.boolean({ message: 'must be true or false' }).optional()

const _limit = (name: keyof typeof WAF_LIMIT_BOUNDS, unit: string) => {
  const [min, max] = WAF_LIMIT_BOUNDS[name]
  return z
    .number()
    .int(`must be an integer (${unit})`)
    .min(min, `must be at least ${min} (${unit}), or null for the profile's default`)
    .max(max, `must be at most ${max} (${unit})`)
    .nullable()
    .optional()
}

/** Left out of a PUT: the stored value stays (like the optional booleans); on create: the default. */
const _wafFields = {
  waf_profile: z.enum(WAF_PROFILES, { message: 'must be "fast" or "full"' }).optional(),
  waf_families: z
    .array(z.enum(WAF_FAMILY_IDS as [string, ...string[]], { message: `must be one of ${WAF_FAMILY_IDS.join(', ')}` }))
    .max(WAF_FAMILY_IDS.length)
    .refine((a) => new Set(a).size === a.length, 'must not repeat a family')
    .optional(),
  waf_body_limit_kb: _limit('bodyLimitKb', 'KiB'),
  waf_body_max_args: _limit('maxArgs', 'arguments'),
  waf_json_max_depth: _limit('jsonMaxDepth', 'levels'),
  waf_body_limit_action: z
    .enum(WAF_LIMIT_ACTIONS, { message: 'must be "partial", "pass" or "refuse", or null for the profile\'s default' })
    .nullable()
    .optional(),
  waf_allowed_content_types: z
    .array(
      z
        .string()
        .trim()
        .toLowerCase()
        .regex(CONTENT_TYPE_PATTERN, 'must be a media type such as text/plain or application/json (no parameters, spaces or |)'),
    )
    .max(50, 'at most 50 content types')
    .refine((a) => new Set(a).size === a.length, 'must not repeat a content type')
    .nullable()
    .optional(),
}
export type WafFieldsInput = { [K in keyof typeof _wafFields]: z.infer<(typeof _wafFields)[K]> }

export const hostBody = z.strictObject({
  domain: hostnameSchema,
  aliases: z.array(hostnameSchema).max(50, 'at most 50 aliases').default([]),
  // Only a proxy host needs one (hosts/kinds.ts says so with the field's name); the other kinds may leave it null.
  target_group_id: z.number().int().positive('must be a target group id').nullable().default(null),
  tls_mode: z.enum(['auto', 'manual', 'none'], { message: 'must be "auto", "manual" or "none"' }),
  tls_challenge: z.enum(['dns', 'http', 'tls-alpn'], { message: 'must be "dns", "http" or "tls-alpn"' }).default('http'),
  // nullable() rather than a union with null: zod then names the inner problem, not "Invalid input".
  tls_email: emailSchema.nullable().default(null),
  tls_dns_provider: dnsProviderNameSchema.nullable().default(null),
  tls_acme_ca_url: urlSchema({ schemes: ['https'] })
    .describe('ACME directory URL')
    .nullable()
    .default(null),
  enabled: _optionalBool,
  lan_only: _optionalBool,
  true_detect_mode: _optionalBool,
  engine_down_refuse: _optionalBool,
  auth_required: _optionalBool,
  waf_enabled: _optionalBool,
  waf_mode: z.enum(['detection', 'blocking'], { message: 'must be "detection" or "blocking"' }).default('detection'),
  rate_limit_enabled: _optionalBool,
  rate_limit_rps: z.number().int().min(1, 'must be at least 1').max(100_000).default(50),
  rate_limit_burst: z.number().int().min(0, 'must not be negative').max(100_000).default(100),
  bouncer_enabled: _optionalBool,
  ..._wafFields,
  // The escape hatch: left out of a PUT, the stored list stays.
  custom_handlers: z
    .array(z.record(z.string(), z.unknown(), { message: 'must be a JSON object such as {"handler": "headers", ...}' }), {
      message: 'must be a list of JSON objects, each with a "handler" field',
    })
    .superRefine((handlers, ctx) => {
      const problem = customHandlersProblem(handlers)
      if (problem) ctx.addIssue({ code: 'custom', message: problem })
    })
    .optional(),
  custom_handlers_at: z.enum(CUSTOM_HANDLER_POINTS, { message: `must be one of ${CUSTOM_HANDLER_POINTS.join(', ')}` }).optional(),
  // Left out of a PUT: the stored value stays; on create: 'inherit' (the global setting proxy.compression).
  compression: z
    .enum(['inherit', 'on', 'off'], { message: 'must be "inherit" (follow the global compression setting), "on" or "off"' })
    .optional(),
  ...headerFields,
  ...hostKindFields,
  // Pages of our own (docs/hosts.md, "Pages"). Left out of a PUT: the stored value stays; on create: 'inherit'.
  error_pages: z
    .enum(['inherit', 'on', 'off'], { message: 'must be "inherit" (follow the global setting proxy.error_pages), "on" or "off"' })
    .optional(),
  // The operator's short message on the host's pages; null: the global one (proxy.error_page_message).
  error_page_message: errorPageMessageField,
  // Who and where may enter (docs/access-control.md). Left out of a PUT: the stored value stays.
  geo_policy: geoPolicySchema.nullable().optional(),
  ...hostIdentityFields,
})
export type HostInput = z.infer<typeof hostBody>

/** What a stored host looks like (the API's answer, the proxy snapshot): the request shape with every default resolved. */
export const hostRecord = hostBody.required().extend({ id: z.number().int() })
export type Host = z.output<typeof hostRecord>
/** A host's fields without its id: what a create or an update writes. */
export type HostFields = Omit<Host, 'id'>

type _OptionalHostField = { [K in keyof HostInput]-?: undefined extends HostInput[K] ? K : never }[keyof HostInput]
/** The value a create gives each field a request may leave out; an update keeps the stored value instead. */
export const HOST_DEFAULTS: Pick<HostFields, _OptionalHostField> = {
  enabled: true,
  lan_only: false,
  true_detect_mode: false,
  engine_down_refuse: false,
  auth_required: false,
  waf_enabled: false,
  rate_limit_enabled: false,
  bouncer_enabled: true,
  waf_profile: 'full',
  waf_families: WAF_DEFAULT_FAMILIES,
  waf_body_limit_kb: null,
  waf_body_max_args: null,
  waf_json_max_depth: null,
  waf_body_limit_action: null,
  waf_allowed_content_types: null,
  custom_handlers: [],
  custom_handlers_at: 'before_proxy',
  compression: 'inherit',
  header_rules: [],
  upstream_host: null,
  hsts: null,
  security_headers: false,
  csp: null,
  ...HOST_KIND_DEFAULTS,
  error_pages: 'inherit',
  error_page_message: null,
  geo_policy: null,
  auth_allowed_users: [],
  auth_allowed_groups: [],
}

/** The fields a request gave, the fallback's (defaults on create, the stored host on update) for those it left out. */
export function resolveHostFields(input: HostInput, fallback: Pick<HostFields, _OptionalHostField>): HostFields {
  const fields: Record<string, unknown> = {}
  // Only the fields a request may leave out come from the fallback (a stored host also carries its id).
  for (const key of Object.keys(HOST_DEFAULTS) as _OptionalHostField[]) fields[key] = fallback[key]
  for (const [key, value] of Object.entries(input)) if (value !== undefined) fields[key] = value
  // Arrays are copied so a later change to the input or the defaults never reaches a stored value.
  return structuredClone(fields) as HostFields
}

function _isValidUpstreamHost(host: string): boolean {
  if (host.startsWith('[') && host.endsWith(']')) return isIP(host.slice(1, -1)) === 6
  return isIP(host) === 4 || isValidHostname(host)
}

export const targetAddressSchema = z
  .string()
  .trim()
  .max(300)
  .refine((a) => {
    const m = /^(.+):(\d{1,5})$/.exec(a)
    return !!m && _isValidUpstreamHost(m[1]!.toLowerCase()) && Number(m[2]) >= 1 && Number(m[2]) <= 65535
  }, 'must be host:port with a port from 1 to 65535, such as 10.0.0.5:8080 or app:3000')

export const targetGroupBody = z.strictObject({
  name: safeText(100).trim().min(1, 'must not be empty'),
  targets: z
    .array(
      z.strictObject({
        address: targetAddressSchema,
        weight: z.number().int('must be an integer').min(1, 'must be at least 1').max(1000, 'must be at most 1000').default(1),
      }),
    )
    .min(1, 'needs at least one target')
    .max(100, 'at most 100 targets'),
  scheme: z.enum(['http', 'https'], { message: 'must be "http" or "https"' }).default('http'),
  lb_policy: z
    .enum(['round_robin', 'least_conn', 'random', 'first', 'ip_hash', 'weighted_round_robin'], {
      message: 'must be one of round_robin, least_conn, random, first, ip_hash, weighted_round_robin',
    })
    .default('round_robin'),
  health_check: z
    .union([
      z.strictObject({
        path: z
          .string()
          .max(512)
          .regex(/^\/[A-Za-z0-9\-._~/%?=&]*$/, 'must be a path such as /healthz'),
        interval_seconds: z.number().int().min(1, 'must be at least 1').max(3600, 'must be at most 3600').default(10),
        expect_status: z.number().int().min(100).max(599).default(200),
      }),
      z.null(),
    ])
    .default(null),
  tls_skip_verify: z.boolean().default(false),
})
export type TargetGroupInput = z.infer<typeof targetGroupBody>
export const targetGroupRecord = targetGroupBody.extend({ id: z.number().int() })
export type TargetGroup = z.output<typeof targetGroupRecord>

const _METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const

const _ruleFields = z.strictObject({
  priority: z.number().int().min(0).max(10_000).default(100),
  path: z
    .string()
    .max(512)
    .regex(/^\/[A-Za-z0-9\-._~/%*]*$/, 'must start with / and use only letters, digits, - . _ ~ / % and * (glob)'),
  methods: z
    .array(z.enum(_METHODS, { message: `must be one of ${_METHODS.join(', ')}` }))
    .max(7)
    .default([]),
  action: z.enum(['proxy', 'redirect', 'respond'], { message: 'must be "proxy", "redirect" or "respond"' }),
  target_group_id: z.union([z.number().int().positive(), z.null()]).default(null),
  redirect_url: z
    .union(
      [
        urlSchema(),
        z
          .string()
          .max(2048)
          .regex(/^\/[^\s"'<>\\{}\u0000-\u001f\u007f]*$/, 'must be a path starting with /'),
      ],
      { message: 'must be an http(s) URL or a path starting with / (no spaces, quotes, angle brackets, backslashes or braces)' },
    )
    .nullable()
    .default(null),
  redirect_status: z.union([z.literal(301), z.literal(302), z.literal(303), z.literal(307), z.literal(308), z.null()]).default(null),
  respond_status: z.union([z.number().int().min(100).max(599), z.null()]).default(null),
  respond_body: safeText(65_536, { multiline: true })
    .regex(/^[^{}]*$/, 'must not contain braces (proxy placeholders)')
    .nullable()
    .default(null),
  // The host's rule shape and checks, applied only to the requests this rule matches, after the host's.
  header_rules: z.array(headerRuleSchema).max(50, 'at most 50 header rules').default([]),
  // Applied to the requests this rule matches, after the host's own policy (docs/access-control.md).
  geo_policy: geoPolicySchema.nullable().default(null),
})
export const ruleBody = _ruleFields.superRefine((r, ctx) => {
  if (r.action === 'redirect' && !r.redirect_url)
    ctx.addIssue({ code: 'custom', path: ['redirect_url'], message: 'is required when action is "redirect"' })
})
export type RuleInput = z.infer<typeof ruleBody>
export const ruleRecord = _ruleFields.extend({ id: z.number().int(), host_id: z.number().int() })
export type Rule = z.output<typeof ruleRecord>

const _ruleId = z
  .number()
  .int('must be an integer')
  .min(1, 'must be a rule id such as 942100')
  .max(9_999_999, 'must be a rule id such as 942100 (at most 7 digits)')
  .refine(
    (id) => id < WAF_CONTROL_RULE_RANGE[0] || id > WAF_CONTROL_RULE_RANGE[1],
    `must not be one of the panel's control rules (${WAF_CONTROL_RULE_RANGE[0]}-${WAF_CONTROL_RULE_RANGE[1]})`,
  )
const _exclusionPath = z
  .string()
  .max(512, 'must be at most 512 characters')
  .regex(WAF_EXCLUSION_PATH, 'must be a path such as /api/hooks or a prefix such as /api/* (no spaces, quotes or backslashes)')
  .refine((p) => !p.includes('%{'), 'must not contain %{ (a rule macro)')
  .nullable()
  .default(null)
const _exclusionArgument = z
  .string()
  .regex(WAF_EXCLUSION_ARGUMENT, 'must be an argument name such as q or json.items.0.name (letters, digits, _ . - [ ])')
  .nullable()
  .default(null)

export const wafExclusionBody = z.strictObject({
  rule_id: _ruleId,
  path: _exclusionPath,
  argument: _exclusionArgument,
  note: safeText(200).nullable().default(null),
})
export type WafExclusionInput = z.infer<typeof wafExclusionBody>
export const wafExclusionRecord = wafExclusionBody.extend({
  id: z.number().int(),
  host_id: z.number().int(),
  source_log_id: z.number().int().nullable(),
})
export type WafExclusion = z.output<typeof wafExclusionRecord>

/** One click from a waf_audit row: its host and rule; `path` scope (default) or the whole host. */
export const wafExclusionFromLogBody = z.strictObject({
  scope: z
    .enum(['path', 'host'], { message: 'must be "path" (this rule under the row\'s path) or "host" (this rule everywhere on the host)' })
    .default('path'),
  argument: _exclusionArgument,
  note: safeText(200).nullable().default(null),
})
export type WafExclusionFromLogInput = z.infer<typeof wafExclusionFromLogBody>

/** A set of exclusions from a waf_audit row (docs/waf.md, "Exclusions that unblock"). */
export const wafUnblockBody = z.strictObject({
  scope: z
    .enum(['path', 'host'], { message: 'must be "path" (the rules under the row\'s path) or "host" (the rules everywhere on the host)' })
    .default('path'),
  rule_ids: z
    .array(_ruleId)
    .min(1, 'must name at least one rule, or be left out for the set that unblocks the request')
    .max(64, 'must name at most 64 rules')
    .optional(),
  note: safeText(200).nullable().default(null),
})
export type WafUnblockInput = z.infer<typeof wafUnblockBody>

/** `GET /api/hosts/{id}/waf-exclusion-preview`: a comma list of rule ids and the path (absent: the whole host). */
export const wafExclusionPreviewQuery = z.strictObject({
  rule_ids: z.string().regex(/^\d{1,7}(,\d{1,7}){0,63}$/, 'must be a comma-separated list of rule ids such as 942100,942190 (at most 64)'),
  path: z
    .string()
    .max(512, 'must be at most 512 characters')
    .regex(WAF_EXCLUSION_PATH, 'must be a path such as /search or a prefix such as /api/* (no spaces, quotes or backslashes)')
    .optional(),
})
