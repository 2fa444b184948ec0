import { z } from 'zod'
import {
  hostBody,
  hostRecord,
  ruleBody,
  ruleRecord,
  targetGroupBody,
  targetGroupRecord,
  wafExclusionBody,
  wafExclusionFromLogBody,
  wafExclusionPreviewQuery,
  wafUnblockBody,
  wafExclusionRecord,
} from '../../hosts/schemas'
import { hostDnsCheckSchema } from '../../proxy/dns-check'
import { WAF_LIMIT_ACTIONS, WAF_PROFILES } from '../../proxy/build/waf-rules'
import { idParam, noContent, nullableTimestamp, ok, operation, reconcileSchema, timestamp } from '../registry'

// Area: hosts, target groups, path rules.

export const acmeFailureSchema = z.strictObject({
  name: z.string().describe('the certificate name the attempt was for'),
  at: timestamp(),
  operation: z.enum(['obtain', 'renew']),
  kind: z.enum([
    'dns_server_unreachable',
    'dns_update_refused',
    'dns_zone_not_found',
    'dns_txt_not_visible',
    'dns_propagation_timeout',
    'ca_unreachable',
    'challenge_failed',
    'other',
  ]),
  cause: z.string().describe('what went wrong, in words'),
  error: z.string().describe("the proxy's own error text (secrets redacted)"),
})

export const certificateSummarySchema = z.union([
  z.strictObject({
    source: z.enum(['acme', 'manual']),
    not_after: z.union([z.string(), z.null()]),
    issuer: z.union([z.string(), z.null()]),
    last_failure: z
      .union([acmeFailureSchema, z.null()])
      .describe("the proxy's last ACME attempt for one of the host's names failed; null once one succeeds"),
  }),
  z.null(),
])

// The answers' shapes are the stored records (hosts/schemas.ts) plus timestamps: declared once.
const _targetState = z.enum(['healthy', 'unhealthy', 'unknown'])
/** ops/target-health.ts: the active check's verdict from the proxy's log, the passive one from its admin API. */
export const groupHealthSchema = z
  .union([
    z.strictObject({
      state: _targetState.describe('unhealthy when a target is; healthy when every target is; unknown otherwise'),
      targets: z.array(
        z.strictObject({
          address: z.string(),
          state: _targetState.describe('unknown: the group has no health check, or the proxy does not answer'),
          cause: z.union([z.string(), z.null()]).describe('why, in words ("connect: connection refused", "unexpected status code 500")'),
          since: nullableTimestamp().describe('when the current state began, as far as the panel saw it'),
          failed_checks: z.number().int().describe('failed active checks in a row (the current outage)'),
          failed_requests: z
            .union([z.number().int(), z.null()])
            .describe("proxied requests that failed in the passive check's window (30 s); null when the proxy did not answer"),
        }),
      ),
    }),
    z.null(),
  ])
  .describe('health of the targets (on reads; absent from the answers of changes)')

export const hostSchema = hostRecord.extend({
  created_at: timestamp(),
  updated_at: nullableTimestamp(),
  certificate: certificateSummarySchema,
  health: groupHealthSchema.optional().describe("health of the host's target group (on reads)"),
  custom_handler_count: z
    .number()
    .int()
    .describe('how many custom handlers (the escape hatch, docs/hosts.md) the host carries; 0 for none'),
})
const hostWithReconcile = hostSchema.extend({
  reconcile: reconcileSchema,
  dns_check: hostDnsCheckSchema
    .optional()
    .describe(
      "only when the save checked the host's DNS provider first (DNS-01 set or its provider changed, and the provider had no passed check with its current credentials); the host is saved and pushed whatever it says (docs/dns-check.md)",
    ),
})
const hostDnsCheckAnswer = hostDnsCheckSchema.extend({ host_id: z.number().int() })

export const targetGroupSchema = targetGroupRecord.extend({
  created_at: timestamp(),
  updated_at: nullableTimestamp(),
  health: groupHealthSchema.optional(),
})

export const wafExclusionSchema = wafExclusionRecord.extend({ created_at: timestamp() })

const _previewCounts = {
  considered: z.number().int().describe('stored WAF rows of the host (the last 1000) whose rules reach the threshold'),
  would_pass: z.number().int().describe("of those, how many would pass with the host's exclusions plus the proposed ones"),
  already_passing: z.number().int().describe("of those, how many already pass with the host's current exclusions"),
}
const _unblockOffer = z.strictObject({
  path: z.union([z.string(), z.null()]).describe('null: the whole host'),
  rule_ids: z.array(z.number().int()).describe('the smallest set that brings the request under the threshold, highest score first'),
  steps: z.array(
    z.strictObject({
      rule_id: z.number().int(),
      score: z.number().int(),
      remaining: z.number().int().describe('the score left once this rule and those before it are excluded'),
    }),
  ),
  score: z.number().int().describe('the score with the exclusions that already apply in this scope'),
  unblocks: z.boolean(),
  already_excluded: z.array(z.number().int()),
  preview: z.union([z.strictObject(_previewCounts), z.null()]),
})
const wafUnblockSchema = z.strictObject({
  log_id: z.number().int(),
  host_id: z.number().int(),
  host_domain: z.union([z.string(), z.null()]),
  request_path: z.string(),
  threshold: z.number().int().describe('the inbound anomaly threshold (appsec.inbound_threshold)'),
  score: z.number().int().describe("the sum of the matched rules' inbound scores"),
  rules: z.array(
    z.strictObject({
      id: z.number().int(),
      severity: z.union([z.string(), z.null()]),
      score: z.number().int(),
      msg: z.union([z.string(), z.null()]),
      excludable: z.boolean(),
    }),
  ),
  path_unusable: z.union([z.string(), z.null()]).describe("why the row's path cannot be an exclusion path, if it cannot"),
  offers: z.strictObject({ path: z.union([_unblockOffer, z.null()]), host: _unblockOffer }),
})

const _nullableInt = z.union([z.number().int(), z.null()])
export const wafCatalogueSchema = z.strictObject({
  profiles: z.array(
    z.strictObject({
      id: z.enum(WAF_PROFILES),
      body_limit_kb: z.number().int(),
      body_max_args: _nullableInt,
      json_max_depth: _nullableInt,
      body_limit_action: z.enum(WAF_LIMIT_ACTIONS),
    }),
  ),
  limit_actions: z.array(z.enum(WAF_LIMIT_ACTIONS)),
  limit_bounds: z.strictObject({
    body_limit_kb: z.array(z.number().int()),
    body_max_args: z.array(z.number().int()),
    json_max_depth: z.array(z.number().int()),
  }),
  families: z.array(z.strictObject({ id: z.string(), label: z.string(), crs_rule_ids: z.array(z.number().int()) })),
  default_families: z.array(z.string()),
  virtual_patches: z.array(z.strictObject({ rule_id: z.number().int(), cve: z.string(), title: z.string() })),
  crs_default_content_types: z.array(z.string()),
})

export const ruleSchema = ruleRecord.extend({ created_at: timestamp(), updated_at: nullableTimestamp() })

const rejected = ok('the proxy rejected the configuration ("proxy rejected configuration: <text>"); nothing was written')

export const hostsOperations = [
  operation({
    method: 'get',
    path: '/api/hosts',
    access: 'session',
    summary: 'List hosts',
    responses: { 200: ok('every host', z.array(hostSchema)) },
  }),
  operation({
    method: 'post',
    path: '/api/hosts',
    access: 'admin',
    summary: 'Create a host (reconciles the proxy)',
    body: hostBody,
    responses: {
      201: ok('the host and the reconcile outcome', hostWithReconcile),
      409: ok('a domain or alias is taken, by another host or by a stream routing it by TLS server name'),
      502: rejected,
    },
  }),
  operation({
    method: 'get',
    path: '/api/hosts/{id}',
    access: 'session',
    summary: 'One host',
    params: idParam('host'),
    responses: { 200: ok('the host', hostSchema), 404: ok('no such host') },
  }),
  operation({
    method: 'get',
    path: '/api/hosts/{id}/dns-delegation',
    access: 'session',
    summary: 'The CNAME records a delegated DNS challenge needs, each looked up',
    params: idParam('host'),
    description:
      "For a DNS-01 host whose provider has a delegation zone (`challenge_delegation`): each `_acme-challenge.<name>` of the host must be a CNAME to `<domain>.<delegation zone>`, where the proxy writes the TXT record (the ACME issuer's override_domain). Each record is looked up from the panel (through the provider's own resolvers when it declares some, RFC 2136's server; else the system resolver) and said to resolve or not, in words. Nothing is written.",
    responses: {
      200: ok(
        'the records and whether each resolves',
        z.strictObject({
          host_id: z.number().int(),
          provider: z.string(),
          zone: z.string(),
          asked: z.array(z.string()),
          ok: z.boolean(),
          records: z.array(
            z.strictObject({
              name: z.string(),
              type: z.literal('CNAME'),
              value: z.string(),
              resolves: z.boolean(),
              found: z.array(z.string()),
              detail: z.string(),
            }),
          ),
        }),
      ),
      400: ok('the host does not delegate its DNS challenge'),
      404: ok('no such host'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/hosts/{id}/dns-check',
    access: 'session',
    summary: "The last check of a DNS-01 host's provider, in words",
    params: idParam('host'),
    description:
      "The host's DNS provider's last check with its current credentials (`last_check`, as on GET /api/dns-providers/{name}), or the last attempt that could not ask node 1's proxy (`pending`), and `state` with `text` saying it in words. Nothing is asked.",
    responses: {
      200: ok('the state of the check', hostDnsCheckAnswer),
      400: ok('the host does not use the DNS challenge'),
      404: ok('no such host'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/hosts/{id}/dns-check',
    access: 'admin',
    summary: "Check the host's DNS provider now, in the zone its orders write",
    params: idParam('host'),
    description:
      'The check of POST /api/dns-providers/{name}/test, in the host\'s zone: the delegation zone with the host (its CNAME checked too) when the provider delegates, else the zone the provider is limited to, else the nearest name above the host with an SOA record. The result becomes the provider\'s `last_check` (audit row `dns_provider_test`); a failure is a health problem (`dns_check_failed`) and a `health_degraded` event. When the proxy cannot be asked the answer is 200 with `state` "pending" and the cause.',
    responses: {
      200: ok('the state after the check', hostDnsCheckAnswer),
      400: ok('the host does not use the DNS challenge, or its provider has no credentials'),
      404: ok('no such host'),
    },
  }),
  operation({
    method: 'put',
    path: '/api/hosts/{id}',
    access: 'admin',
    summary: 'Replace a host (reconciles the proxy)',
    params: idParam('host'),
    body: hostBody,
    description:
      "Optional booleans and the waf_* tuning fields left out keep their stored values; other optional fields take their defaults. A null waf_* limit means the profile's default (docs/waf.md).",
    responses: {
      200: ok('the host and the reconcile outcome', hostWithReconcile),
      404: ok('no such host'),
      409: ok('a domain or alias is taken, by another host or by a stream routing it by TLS server name'),
      502: rejected,
    },
  }),
  operation({
    method: 'delete',
    path: '/api/hosts/{id}',
    access: 'admin',
    summary: 'Delete a host (reconciles the proxy)',
    params: idParam('host'),
    responses: { 204: noContent(), 404: ok('no such host'), 502: rejected },
  }),
  operation({
    method: 'post',
    path: '/api/hosts/{id}/toggle',
    access: 'admin',
    summary: 'Flip `enabled`',
    params: idParam('host'),
    responses: { 200: ok('the host and the reconcile outcome', hostWithReconcile), 404: ok('no such host'), 502: rejected },
  }),
  operation({
    method: 'get',
    path: '/api/hosts/{id}/rules',
    access: 'session',
    summary: "A host's path rules",
    params: idParam('host'),
    responses: { 200: ok('rules by priority', z.array(ruleSchema)), 404: ok('no such host') },
  }),
  operation({
    method: 'post',
    path: '/api/hosts/{id}/rules',
    access: 'admin',
    summary: 'Add a path rule to a host',
    params: idParam('host'),
    body: ruleBody,
    responses: {
      201: ok('the rule and the reconcile outcome', ruleSchema.extend({ reconcile: reconcileSchema })),
      404: ok('no such host'),
      502: rejected,
    },
  }),
  operation({
    method: 'put',
    path: '/api/rules/{id}',
    access: 'admin',
    summary: 'Replace a path rule',
    params: idParam('rule'),
    body: ruleBody,
    responses: {
      200: ok('the rule and the reconcile outcome', ruleSchema.extend({ reconcile: reconcileSchema })),
      404: ok('no such rule'),
      502: rejected,
    },
  }),
  operation({
    method: 'delete',
    path: '/api/rules/{id}',
    access: 'admin',
    summary: 'Delete a path rule',
    params: idParam('rule'),
    responses: { 204: noContent(), 404: ok('no such rule'), 502: rejected },
  }),
  operation({
    method: 'get',
    path: '/api/waf/catalogue',
    access: 'session',
    summary: 'WAF profiles with their defaults, rule families, virtual patches, the CRS default content types',
    responses: { 200: ok('the catalogue', wafCatalogueSchema) },
  }),
  operation({
    method: 'get',
    path: '/api/hosts/{id}/waf-exclusions',
    access: 'session',
    summary: "A host's WAF rule exclusions",
    params: idParam('host'),
    responses: { 200: ok('exclusions, oldest first', z.array(wafExclusionSchema)), 404: ok('no such host') },
  }),
  operation({
    method: 'post',
    path: '/api/hosts/{id}/waf-exclusions',
    access: 'admin',
    summary: 'Turn a WAF rule off for a host, a path (a trailing * makes a prefix) or an argument (reconciles the proxy)',
    params: idParam('host'),
    body: wafExclusionBody,
    responses: {
      201: ok('the exclusion and the reconcile outcome', wafExclusionSchema.extend({ reconcile: reconcileSchema })),
      404: ok('no such host'),
      409: ok('the same exclusion exists'),
      502: rejected,
    },
  }),
  operation({
    method: 'post',
    path: '/api/logs/{id}/waf-exclusion',
    access: 'admin',
    summary: "Exclude a waf_audit row's rule on its host, under its path (scope path) or everywhere (scope host)",
    params: idParam('log row'),
    body: wafExclusionFromLogBody,
    responses: {
      201: ok('the exclusion and the reconcile outcome', wafExclusionSchema.extend({ reconcile: reconcileSchema })),
      400: ok('the row is not a waf_audit row of a known host with a rule'),
      404: ok('no such log row'),
      409: ok('the same exclusion exists'),
      502: rejected,
    },
  }),
  operation({
    method: 'get',
    path: '/api/logs/{id}/waf-unblock',
    access: 'session',
    summary:
      "A waf_audit row's matched rules and score against the threshold, and per scope the set of exclusions that unblocks it, previewed",
    params: idParam('log row'),
    responses: {
      200: ok('the rules, the threshold and the offers', wafUnblockSchema),
      400: ok('the row is not a waf_audit row of a known host'),
      404: ok('no such log row'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/logs/{id}/waf-unblock',
    access: 'admin',
    summary:
      "Exclude a set of rules (default: the offered set) under a waf_audit row's path or on its whole host, in one revision (reconciles the proxy)",
    params: idParam('log row'),
    body: wafUnblockBody,
    responses: {
      201: ok(
        'the exclusions created, the rules already excluded in that scope, the reconcile outcome',
        z.strictObject({
          exclusions: z.array(wafExclusionSchema),
          already_excluded: z.array(z.number().int()),
          reconcile: reconcileSchema,
        }),
      ),
      400: ok('not a waf_audit row of a known host, a rule that did not match, or no set unblocks the request'),
      404: ok('no such log row'),
      409: ok('every rule is already excluded in that scope'),
      502: rejected,
    },
  }),
  operation({
    method: 'get',
    path: '/api/hosts/{id}/waf-exclusion-preview',
    access: 'session',
    summary: "What excluding a set of rules under a path (or on the whole host) would have let through among the host's stored WAF rows",
    params: idParam('host'),
    query: wafExclusionPreviewQuery,
    responses: {
      200: ok(
        'the counts',
        z.strictObject({
          host_id: z.number().int(),
          rule_ids: z.array(z.number().int()),
          path: z.union([z.string(), z.null()]),
          threshold: z.number().int(),
          ..._previewCounts,
        }),
      ),
      404: ok('no such host'),
    },
  }),
  operation({
    method: 'delete',
    path: '/api/waf-exclusions/{id}',
    access: 'admin',
    summary: 'Remove a WAF rule exclusion (reconciles the proxy)',
    params: idParam('WAF exclusion'),
    responses: { 204: noContent(), 404: ok('no such exclusion'), 502: rejected },
  }),
  operation({
    method: 'get',
    path: '/api/target-groups',
    access: 'session',
    summary: 'List target groups',
    responses: { 200: ok('every group', z.array(targetGroupSchema)) },
  }),
  operation({
    method: 'post',
    path: '/api/target-groups',
    access: 'admin',
    summary: 'Create a target group',
    body: targetGroupBody,
    responses: { 201: ok('the group', targetGroupSchema.extend({ reconcile: reconcileSchema })), 409: ok('the name is taken') },
  }),
  operation({
    method: 'get',
    path: '/api/target-groups/{id}',
    access: 'session',
    summary: 'One target group',
    params: idParam('target group'),
    responses: { 200: ok('the group', targetGroupSchema), 404: ok('no such group') },
  }),
  operation({
    method: 'put',
    path: '/api/target-groups/{id}',
    access: 'admin',
    summary: 'Replace a target group (reconciles the proxy)',
    params: idParam('target group'),
    body: targetGroupBody,
    responses: {
      200: ok('the group', targetGroupSchema.extend({ reconcile: reconcileSchema })),
      404: ok('no such group'),
      409: ok('the name is taken'),
      502: rejected,
    },
  }),
  operation({
    method: 'delete',
    path: '/api/target-groups/{id}',
    access: 'admin',
    summary: 'Delete a target group',
    params: idParam('target group'),
    responses: { 204: noContent(), 404: ok('no such group'), 409: ok('a host, rule or stream still uses it') },
  }),
]
