import { z } from 'zod'
import { SETTINGS_CATALOGUE, settingsPatchBody } from '../../core/settings'
import { createUserBody, updateUserBody } from '../../auth/schemas'
import { idParam, noContent, nullableTimestamp, ok, operation, timestamp } from '../registry'
import { forwardAuthCheckQuery } from '../../proxy/forward-auth-check'
import { userSchema } from './auth'
import { clientAddressHealthSchema, engineHealthSchema, healthProblemsSchema, proxyHealthSchema } from './ops'
import { nodeStatusSchema } from './nodes'

// Area: system health, run-time settings, users, liveness, this reference itself.

const nullable = <T extends z.ZodType>(t: T) => z.union([t, z.null()])
const int = () => z.number().int()

/** GET answer: every key; secrets as "__SET__" or "". */
export const settingsSchema = z.strictObject(
  Object.fromEntries(SETTINGS_CATALOGUE.map((d) => [d.key, (d.secret ? z.enum(['__SET__', '']) : d.schema).describe(d.description)])),
)

const backgroundRunSchema = z.strictObject({
  kind: z.enum(['task', 'loop']).describe('task: a nitro task (scheduled or started by the panel); loop: a loop started at boot'),
  last_status: z
    .enum(['never', 'running', 'ok', 'failed'])
    .describe('never: not run yet by this process (a monthly task right after start)'),
  last_start_at: nullableTimestamp(),
  last_end_at: nullableTimestamp(),
  last_duration_ms: nullable(int()),
  last_error: nullable(z.string()).describe('why the last run failed (secrets redacted); null after a run that succeeded'),
  last_result: z.unknown().describe('what the last successful task run returned (rows deleted and the like); null for a loop'),
  runs: int(),
  failures: int(),
})

export const systemHealthSchema = z.strictObject({
  memory: z.strictObject({ alloc_bytes: int(), sys_bytes: int(), gc_count: int() }),
  event_loop: z.strictObject({ lag_ms: z.number(), p99_lag_ms: z.number(), active_handles: int() }),
  db: z.strictObject({
    open_connections: int(),
    idle: int(),
    in_use: int(),
    write_queue_waiting: int(),
    file_size_bytes: nullable(int()),
    wal_size_bytes: nullable(int()),
  }),
  panel: z.strictObject({ mode: z.enum(['lan', 'public']), domain: z.string(), uptime_seconds: int(), version: z.string() }),
  workers: z
    .strictObject({ notification_queue_depth: int(), notification_queue_capacity: int(), notification_queue_dropped: int() })
    .optional(),
  scheduler: z.strictObject({ last_backup_at: nullableTimestamp(), last_backup_status: nullable(z.enum(['ok', 'failed'])) }).optional(),
  proxy: proxyHealthSchema.optional(),
  proxy_nodes: z
    .strictObject({
      nodes: z
        .array(nodeStatusSchema.extend({ id: int(), name: z.string(), enabled: z.boolean() }))
        .describe('every proxy node, node 1 (the canary) first, with what this process last saw of it'),
      enabled: int().describe('nodes a push goes to'),
      in_sync: int().describe('enabled nodes seen holding the configuration last pushed'),
    })
    .optional(),
  security_engine: engineHealthSchema.optional(),
  client_addresses: clientAddressHealthSchema,
  problems: healthProblemsSchema,
  background: z
    .record(z.string(), backgroundRunSchema)
    .describe('the last run of every task and loop of this process, by name (such as logs:prune, proxy:reconcile)'),
  decision_mirror: z
    .strictObject({
      enabled: z.boolean().describe('LAPI_PANEL_BOUNCER_KEY is set: the decision list and the bans last known come from the mirror'),
      pull_seconds: int().describe('LAPI_PANEL_PULL_SECONDS: the stream interval'),
      decisions: int().describe('decisions held (expired ones leave at the next pull)'),
      banned_sources: nullable(int()).describe("the distinct sources the proxy's bouncer refuses among them; null before the first pull"),
      synced_at: nullableTimestamp().describe('the last successful pull: how fresh the list is'),
      full_sync_at: nullableTimestamp().describe('the last full pull (at start, after a failed pull, and hourly)'),
      full_syncs: int(),
      last_error: nullable(z.string()).describe('why the last pull failed; null once one succeeds'),
      last_error_at: nullableTimestamp(),
    })
    .optional(),
})

export const systemOperations = [
  operation({
    method: 'get',
    path: '/healthz',
    access: 'public',
    summary: 'Liveness: `ok` while the HTTP layer answers (probes nothing)',
    responses: { 200: ok('the text ok', undefined, { contentType: 'text/plain' }) },
  }),
  operation({
    method: 'get',
    path: '/api/system/gates',
    access: 'session',
    summary:
      'What the LAN-only and ForwardAuth switches of a host do: the ranges that pass, the login URL visitors are sent to, and warnings about it',
    responses: {
      200: ok(
        'the switches explained',
        z.strictObject({
          lan_ranges: z.array(z.string()),
          forward_auth: z.strictObject({
            login_url: z.string(),
            returns_to_requested_page_under: z.string(),
            warnings: z.array(z.string()),
          }),
        }),
      ),
    },
  }),
  operation({
    method: 'get',
    path: '/api/system/forward-auth-check',
    access: 'session',
    summary: "Whether the proxy reaches the panel's ForwardAuth endpoint, asked through the proxy itself",
    query: forwardAuthCheckQuery,
    description:
      "The panel sends one request to the proxy's plain HTTP listener with the Host of the probe route the generated configuration always holds; the proxy runs the same ForwardAuth sub-request as a protected host, to the same address (PANEL_INTERNAL_URL). A nonce the proxy copies onto its sub-request tells whether it reached this panel. Nothing is changed.",
    responses: {
      200: ok(
        'the outcome (every outcome the check could establish is a 200; state says which)',
        z.strictObject({
          state: z
            .enum(['reachable', 'unreachable', 'not_this_panel', 'probe_missing'])
            .describe(
              "reachable: the panel received the proxy's sub-request; unreachable: the proxy could not connect (5xx); not_this_panel: something else answered there; probe_missing: the proxy lacks the panel's current configuration",
            ),
          message: z.string().describe('what was found and, on a failure, what to change'),
          panel_address: z.string().describe('host:port the proxy dials for ForwardAuth'),
          proxy_address: z.string().describe("the proxy's plain HTTP listener the probe was sent to"),
          proxy_status: z.number().int().describe("the proxy's status answer to the probe"),
          checked_at: timestamp(),
        }),
      ),
      502: ok("the panel could not reach the proxy's HTTP listener to run the check"),
    },
  }),
  operation({
    method: 'get',
    path: '/api/system/health',
    access: 'session',
    summary: 'Runtime, database, workers, scheduler, background runs, proxy and engine health',
    responses: { 200: ok('health', systemHealthSchema) },
  }),
  operation({
    method: 'get',
    path: '/api/settings',
    access: 'session',
    summary: 'Every run-time setting',
    responses: { 200: ok('settings', settingsSchema) },
  }),
  operation({
    method: 'put',
    path: '/api/settings',
    access: 'admin',
    summary: 'Change some settings (validated all at once; `__UNCHANGED__` keeps a secret)',
    description: 'Keys that the proxy configuration depends on reconcile the proxy in the same request.',
    body: settingsPatchBody,
    responses: { 200: ok('every setting after the change', settingsSchema) },
  }),
  operation({
    method: 'get',
    path: '/api/openapi.json',
    access: 'session',
    summary: 'This API reference as OpenAPI 3.1',
    responses: {
      200: ok('the document', z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.record(z.string(), z.unknown()) })),
    },
  }),
  operation({
    method: 'get',
    path: '/api/docs',
    access: 'session',
    summary: 'This API reference as a page (self-contained HTML)',
    responses: { 200: ok('HTML page', undefined, { contentType: 'text/html' }) },
  }),
  operation({
    method: 'get',
    path: '/api/users',
    access: 'admin',
    summary: 'List users',
    responses: { 200: ok('every user', z.array(userSchema)) },
  }),
  operation({
    method: 'post',
    path: '/api/users',
    access: 'admin',
    summary: 'Create a local user',
    body: createUserBody,
    responses: { 201: ok('the user', userSchema), 409: ok('the email is taken') },
  }),
  operation({
    method: 'get',
    path: '/api/users/groups',
    access: 'admin',
    summary: "Every group name in use (panel-local and OIDC), for a host's auth_allowed_groups",
    responses: {
      200: ok(
        'sorted by name',
        z.array(
          z.strictObject({
            name: z.string(),
            local_users: z.number().int().describe('users given this panel-local group'),
            oidc_users: z.number().int().describe('users whose OIDC group claim gave it at their last login'),
          }),
        ),
      ),
    },
  }),
  operation({
    method: 'get',
    path: '/api/users/{id}',
    access: 'admin',
    summary: 'One user',
    params: idParam('user'),
    responses: { 200: ok('the user', userSchema), 404: ok('no such user') },
  }),
  operation({
    method: 'put',
    path: '/api/users/{id}',
    access: 'admin',
    summary: 'Replace a user (password optional)',
    params: idParam('user'),
    body: updateUserBody,
    responses: { 200: ok('the user', userSchema), 404: ok('no such user'), 409: ok('email taken, or the last admin would be demoted') },
  }),
  operation({
    method: 'delete',
    path: '/api/users/{id}',
    access: 'admin',
    summary: 'Delete a user (never the last admin)',
    params: idParam('user'),
    responses: { 204: noContent(), 404: ok('no such user'), 409: ok('the last admin cannot be deleted') },
  }),
]
