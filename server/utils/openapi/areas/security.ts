import { z } from 'zod'
import { decisionOriginsQuery, decisionsQuery, unbanIpBody, unbanIpQuery } from '../../security/decisions'
import { whitelistBody } from '../../security/whitelist'
import { banBody } from '../../security/bans'
import { SCENARIO_NAME_PATTERN, scenarioPatchBody } from '../../security/scenarios'
import { ipOrCidrText } from '../../core/validate'
import { appsecTuningBody } from '../../security/appsec'
import { idParam, noContent, nullableTimestamp, ok, operation, timestamp } from '../registry'

// Area: the security engine (decisions, whitelist, scenarios, drift, AppSec
// tuning, check-self, overview). Country bans and jobs: countries.ts.

const nullableString = () => z.union([z.string(), z.null()])

export const decisionSchema = z.strictObject({
  id: z.number().int(),
  value: z.string(),
  scope: z.string().describe('Ip, Range, Country or AS'),
  type: z.string(),
  origin: z.string(),
  scenario: z.string(),
  duration: z.string().describe('time left, Go duration'),
  until: nullableString(),
  country: nullableString(),
  as_number: z.union([z.number().int(), z.null()]),
})
/** A row of the list: the panel's own bans (origin panel) carry the reason the operator gave. */
const listedDecisionSchema = decisionSchema.extend({
  reason: nullableString().describe('the reason given when the ban was made in the panel; null for other origins or none given'),
})
const rawDecisionSchema = z.strictObject({
  id: z.number().int(),
  value: z.string(),
  scope: z.string(),
  type: z.string(),
  origin: z.string(),
  scenario: z.string(),
  duration: z.string(),
})

export const whitelistEntrySchema = z.strictObject({
  value: z.string(),
  reason: z.string(),
  created_at: timestamp(),
  created_by: z.string(),
})

export const scenarioSchema = z.strictObject({
  short_name: z.string(),
  source: z.enum(['hub', 'local']),
  canonical_name: z.string(),
  path: z.string(),
  disabled: z.boolean(),
  description: z.string().optional(),
})

const driftRepair = z.strictObject({
  at: timestamp(),
  target: z.string().describe('the scenario (author/name) or the file re-applied'),
  detail: z.string().describe('what was found and what was done'),
})
const driftPart = z.strictObject({
  drift_detected: z.boolean().describe('a difference the last check could not repair is left (see details)'),
  checked_at: nullableTimestamp(),
  details: z.array(z.string()).describe('the differences left, each with what the operator can do'),
  repaired: z
    .array(driftRepair)
    .describe(
      're-applications of the stored state, newest first, the last 20 since the panel started (each is also an engine_drift_repair audit row)',
    ),
})
const appsecTuningSchema = z.strictObject({
  inbound_threshold: z.number().int(),
  outbound_threshold: z.number().int(),
  path: nullableString().describe("the CRS plugin file in the engine's data folder"),
  drift_detected: z.boolean(),
})

const _nodeRef = {
  node_id: z.union([z.number().int(), z.null()]).describe('the proxy node this belongs to, when the panel can tell'),
  node: nullableString().describe("that node's name"),
}

export const engineBouncerSchema = z.strictObject({
  name: z.string(),
  ip_address: z.string().describe('the address of its last request (empty before the first)'),
  type: z.string().describe("the bouncer's User-Agent name, such as caddy-cs-bouncer (empty before the first request)"),
  version: z.string(),
  last_pull: nullableTimestamp().describe('when it last read the decisions (the engine moves it at most once a minute); null: never'),
  auth_type: z.string().describe('api-key or tls'),
  revoked: z.boolean(),
  auto_created: z.boolean().describe('made by the engine for a known key used from another address (`<name>@<ip>`)'),
  created_at: nullableTimestamp(),
  key: z
    .enum(['node', 'shared', 'panel', 'other'])
    .describe(
      "node: a node's own bouncer_key; shared: LAPI_BOUNCER_KEY; panel: LAPI_PANEL_BOUNCER_KEY; other: a key the panel does not hold",
    ),
  ..._nodeRef,
})

export const engineMachineSchema = z.strictObject({
  machine_id: z.string(),
  ip_address: z.string(),
  version: z.string(),
  status: z
    .enum(['validated', 'pending'])
    .describe('pending: registered but not yet validated on the engine (`cscli machines validate <id>`)'),
  last_push: nullableTimestamp(),
  last_heartbeat: nullableTimestamp(),
  auth_type: z.string().describe('password or tls'),
  created_at: nullableTimestamp(),
  ..._nodeRef,
  panel: z.boolean().describe("the panel's own machine (LAPI_MACHINE_ID): it writes decisions, belongs to no node and sends no heartbeat"),
})

const _engineDbUnavailable = ok(
  "the engine's database cannot be read: CROWDSEC_CONFIG_DIR unset, a database that is not sqlite, or its file not visible to the panel",
)

export const securityOperations = [
  operation({
    method: 'get',
    path: '/api/security/decisions',
    access: 'session',
    summary: 'Active decisions, newest first (the decision mirror, or cached 15 s)',
    query: decisionsQuery,
    description:
      "With LAPI_PANEL_BOUNCER_KEY the panel answers from its mirror of the local API's decision stream (pulled every LAPI_PANEL_PULL_SECONDS, and at once after a panel change); without it, from a 15 s copy read with the proxy's key. Without limit and before_id the answer holds every active decision; with either, one page: follow X-Next-Before-Id until it is absent.",
    responses: {
      200: ok('decisions, annotated with country and ASN where the value is an address', z.array(listedDecisionSchema), {
        headers: {
          'X-Total-Count': 'active decisions matching the filters, over every page',
          'X-Next-Before-Id': 'the before_id of the next page; absent on the last page and without paging',
          'X-Decisions-Synced-At': 'when the decisions were read from the local API (RFC 3339): how fresh the answer is',
          'X-Decisions-Source': "mirror (the panel's stream copy) or engine (the 15 s copy)",
        },
      }),
      400: ok('a bad filter, limit or before_id'),
      503: ok('the local API is unreachable (and the mirror was never filled)'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/security/decisions/origins',
    access: 'session',
    summary: 'How many active decisions each origin holds (crowdsec, cscli, CAPI, lists, panel, panel-country-<CC>...), most first',
    query: decisionOriginsQuery,
    description:
      "The same decisions and the same q and scope filters as the list, counted per origin over every page: the Security screen groups a page of the list by origin and takes each group's size from here.",
    responses: {
      200: ok(
        'the count per origin',
        z.strictObject({
          origins: z.array(
            z.strictObject({
              origin: z.string(),
              count: z.number().int(),
              country_ban: z.boolean().describe('the ranges of a country ban (origin panel-country-<CC>)'),
            }),
          ),
          total: z.number().int().describe('active decisions matching q and scope, every origin'),
          synced_at: timestamp().describe('when the decisions were read from the local API'),
          source: z.enum(['mirror', 'engine']),
        }),
      ),
      400: ok('a bad filter'),
      503: ok('the local API is unreachable (and the mirror was never filled)'),
    },
  }),
  operation({
    method: 'delete',
    path: '/api/security/decisions/{id}',
    access: 'admin',
    summary: 'Unban one decision (idempotent)',
    params: idParam('decision'),
    responses: { 204: noContent(), 503: ok('the local API is unreachable') },
  }),
  operation({
    method: 'post',
    path: '/api/security/decisions',
    access: 'admin',
    summary:
      'Ban an address or a range (origin "panel"); refused for a whitelisted source, and without confirm for one that reaches your own address, a trusted proxy, a LAN/loopback range or a whitelisted entry',
    body: banBody,
    responses: {
      201: ok(
        'the ban as sent to the engine',
        z.strictObject({
          value: z.string(),
          scope: z.enum(['Ip', 'Range']),
          type: z.literal('ban'),
          origin: z.literal('panel'),
          scenario: z.string(),
          duration: z.string(),
        }),
      ),
      409: ok(
        'the source is covered by a whitelist entry; or, without confirm: true, it reaches your own address, a trusted proxy, a LAN/loopback range or a whitelisted entry (the error names which)',
      ),
      503: ok('the local API is unreachable or refused the ban'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/security/decisions/unban-ip',
    access: 'session',
    summary:
      'Preview of unban-ip: the active decisions it would remove (ranges included) and the country-ban ranges it would keep, read from the engine',
    query: unbanIpQuery,
    responses: {
      200: ok(
        'what unban-ip would remove and keep',
        z.strictObject({ ip: z.string(), would_remove: z.array(decisionSchema), kept_country_decisions: z.array(decisionSchema) }),
      ),
      503: ok('the local API is unreachable'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/security/decisions/unban-ip',
    access: 'admin',
    summary: 'Remove every active decision banning an address (country-ban ranges are kept)',
    body: unbanIpBody,
    responses: {
      200: ok(
        'what was removed and what was kept',
        z.strictObject({
          ip: z.string(),
          removed_decision_count: z.number().int(),
          removed_decision_ids: z.array(z.number().int()),
          kept_country_decisions: z.array(decisionSchema),
        }),
      ),
      503: ok('the local API is unreachable'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/security/whitelist',
    access: 'session',
    summary: 'Whitelist entries',
    responses: { 200: ok('entries', z.strictObject({ entries: z.array(whitelistEntrySchema) })) },
  }),
  operation({
    method: 'post',
    path: '/api/security/whitelist',
    access: 'admin',
    summary: 'Whitelist an address or CIDR (removes the decisions it covers)',
    body: whitelistBody,
    responses: {
      201: ok('the entry', whitelistEntrySchema.extend({ removed_decision_count: z.number().int() })),
      409: ok('already whitelisted'),
      503: ok("the engine's config folder is not mounted (CROWDSEC_CONFIG_DIR)"),
    },
  }),
  operation({
    method: 'delete',
    path: '/api/security/whitelist/{value}',
    access: 'admin',
    summary: 'Remove a whitelist entry',
    params: { value: { schema: ipOrCidrText(), description: 'the address or CIDR, URL-encoded (/ as %2F)' } },
    responses: { 204: noContent(), 404: ok('no such entry'), 503: ok("the engine's config folder is not mounted (CROWDSEC_CONFIG_DIR)") },
  }),
  operation({
    method: 'get',
    path: '/api/security/scenarios',
    access: 'session',
    summary: "The engine's scenarios and the operator-disabled set",
    responses: {
      200: ok(
        'scenarios',
        z.strictObject({
          scenarios: z.array(scenarioSchema),
          is_available: z.boolean(),
          mount_path: nullableString(),
          disabled_count: z.number().int(),
          last_modified_at: timestamp().optional(),
          drift_detected: z.boolean(),
        }),
      ),
    },
  }),
  operation({
    method: 'patch',
    path: '/api/security/scenarios/{name}',
    access: 'admin',
    summary: 'Disable or re-enable a scenario',
    params: {
      name: {
        schema: z.string().max(200).regex(SCENARIO_NAME_PATTERN, 'must be <author>/<scenario> such as crowdsecurity%2Fhttp-probing'),
        description: '<author>/<name>, URL-encoded (crowdsecurity%2Fhttp-probing)',
      },
    },
    body: scenarioPatchBody,
    responses: {
      200: ok('the scenario', scenarioSchema),
      404: ok('no such scenario'),
      503: ok("the engine's scenarios folder is not mounted (CROWDSEC_CONFIG_DIR)"),
    },
  }),
  operation({
    method: 'get',
    path: '/api/security/drift',
    access: 'session',
    summary: "The drift detector's last check of the engine files: what it re-applied and what is left",
    responses: {
      200: ok('per surface', z.strictObject({ scenarios: driftPart, whitelist: driftPart, profiles: driftPart, appsec: driftPart })),
    },
  }),
  operation({
    method: 'get',
    path: '/api/security/appsec-tuning',
    access: 'session',
    summary: 'CRS anomaly thresholds of the AppSec engine',
    responses: { 200: ok('thresholds', appsecTuningSchema) },
  }),
  operation({
    method: 'put',
    path: '/api/security/appsec-tuning',
    access: 'admin',
    summary: 'Set the CRS anomaly thresholds',
    body: appsecTuningBody,
    responses: { 200: ok('thresholds', appsecTuningSchema), 503: ok("the engine's data folder is not mounted (CROWDSEC_DATA_DIR)") },
  }),
  operation({
    method: 'get',
    path: '/api/security/check-self',
    access: 'session',
    summary: "Is the caller's own address banned or whitelisted",
    responses: {
      200: ok(
        'the verdict',
        z.strictObject({
          ip: nullableString(),
          banned: z.boolean(),
          decisions: z.array(rawDecisionSchema),
          whitelisted: z.boolean(),
          country: nullableString(),
          as_number: z.union([z.number().int(), z.null()]),
        }),
      ),
      503: ok('the local API is unreachable'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/security/overview',
    access: 'session',
    summary: 'Per-host protection counts',
    responses: {
      200: ok(
        'counts',
        z.strictObject({
          hosts_total: z.number().int(),
          waf: z.strictObject({
            enabled: z.number().int(),
            modes: z.strictObject({ detection: z.number().int(), blocking: z.number().int() }),
          }),
          rate_limit_enabled: z.number().int(),
          forward_auth_enabled: z.number().int(),
          lan_only: z.number().int(),
          certificates: z.strictObject({
            total: z.number().int(),
            valid: z.number().int(),
            expiring_soon: z.number().int(),
            expired: z.number().int(),
            manual: z.number().int(),
            acme: z.number().int(),
          }),
          proxy_modules_missing: z.array(z.string()),
        }),
      ),
    },
  }),
  operation({
    method: 'get',
    path: '/api/security/bouncers',
    access: 'session',
    summary: "The engine's bouncers with their last pull, each tied to the proxy node whose key it uses",
    description:
      "Read from the engine's own database, read-only (the local API has no such list). A node's bouncer is found by its key: the node's own bouncer_key, or the shared LAPI_BOUNCER_KEY.",
    responses: { 200: ok('every bouncer, by name', z.array(engineBouncerSchema)), 503: _engineDbUnavailable },
  }),
  operation({
    method: 'get',
    path: '/api/security/machines',
    access: 'session',
    summary: "The engine's machines (agents), validated or pending, each tied to a proxy node where its id or address says so",
    description:
      "Read from the engine's own database, read-only. A machine is a node's agent when its machine id is the node's name, or else when its address is the host of exactly one node's admin URL.",
    responses: { 200: ok('every machine, by id', z.array(engineMachineSchema)), 503: _engineDbUnavailable },
  }),
]
