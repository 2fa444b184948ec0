import { z } from 'zod'
import { nodeBody } from '../../proxy/nodes/node-schemas'
import { idParam, noContent, nullableTimestamp, ok, operation, timestamp } from '../registry'

// Area: proxy nodes, the Caddy instances every configuration is rolled out to (docs/scaling.md).

const nullable = <T extends z.ZodType>(t: T) => z.union([t, z.null()])

export const nodeStatusSchema = z.strictObject({
  reachable: nullable(z.boolean()).describe('whether its admin API answered the last look; null before the first'),
  config_hash: nullable(z.string()).describe('SHA-256 of the configuration it holds, without its admin block (each node keeps its own)'),
  in_sync: nullable(z.boolean()).describe('it holds the configuration last pushed'),
  last_checked_at: nullableTimestamp(),
  last_push_at: nullableTimestamp(),
  last_push_result: nullable(z.enum(['applied', 'unchanged', 'rejected', 'unreachable', 'restored', 'restore-failed'])).describe(
    'restored: a later node refused the roll and this one got its previous configuration back',
  ),
  last_error: nullable(z.string()).describe("the node's refusal or why it did not answer (secrets redacted)"),
  caddy_build: nullable(z.strictObject({ main_module: z.string(), version: z.string(), go_version: nullable(z.string()) })).describe(
    "the build line of the node's /metrics (Caddy's admin API has no version endpoint); null when not served",
  ),
  modules: z.array(z.string()).describe('the plugin modules the panel builds for (PROXY_MODULES, the same on every node)'),
})

export const nodeSchema = z.strictObject({
  id: z.number().int(),
  name: z.string(),
  admin_url: z.string(),
  source: z.enum(['environment', 'registry']).describe('environment: node 1, the node of PROXY_ADMIN_URL'),
  canary: z.boolean().describe('every push goes to this node first'),
  labels: z.array(z.string()),
  enabled: z.boolean(),
  tls: nullable(
    z.strictObject({
      client_cert: z.strictObject({ fingerprint_sha256: z.string(), subject: z.string(), not_after: timestamp() }),
      client_key_set: z.boolean().describe('the key is stored encrypted and never returned'),
      server_ca_set: z.boolean(),
    }),
  ),
  bouncer_key_set: z
    .boolean()
    .describe('the node has a bouncer key of its own (write-only, never returned); false: it uses LAPI_BOUNCER_KEY'),
  bouncer: nullable(
    z.strictObject({
      name: z.string().describe("the bouncer's name on the engine"),
      last_pull: nullableTimestamp().describe('when it last read the decisions; null: never'),
    }),
  ).describe(
    "the node's bouncer as the engine knows it (GET /api/security/bouncers); null: none found or the engine's database not readable",
  ),
  created_at: timestamp(),
  updated_at: timestamp(),
  status: nodeStatusSchema,
  storage: z
    .strictObject({
      module: nullable(z.string()).describe('the storage module the node runs (panel_redis, file_system); null: not known'),
      ok: nullable(z.boolean()).describe(
        'a probe key was written, read and deleted; null: not looked at yet, the node did not answer, or its build has no storage module',
      ),
      error: nullable(z.string()).describe('why not, in words (secrets redacted)'),
      latency_ms: nullable(z.number()).describe('the probe round trip from the node to its storage'),
      checked_at: nullableTimestamp(),
    })
    .describe(
      "the node's certificate storage as its admin API says (GET /panel/storage/health, looked at every 10 s; docs/scaling.md); a failing one is the health problem proxy_storage_unreachable",
    ),
})

export const nodesOperations = [
  operation({
    method: 'get',
    path: '/api/nodes',
    access: 'session',
    summary: 'List proxy nodes with their status',
    responses: { 200: ok('every node, node 1 (the canary) first', z.array(nodeSchema)) },
  }),
  operation({
    method: 'post',
    path: '/api/nodes',
    access: 'admin',
    summary: 'Register a proxy node (the reconcile loop pushes the current configuration to it)',
    body: nodeBody,
    description:
      "http admin URL: a node on a private network. https admin URL: Caddy's remote admin endpoint (admin.remote), with `tls` holding the panel's client certificate and key (the key is stored encrypted, never returned) and the CA of the node's identity certificate.",
    responses: { 201: ok('the node', nodeSchema), 409: ok('the name, the admin URL or the bouncer key is taken') },
  }),
  operation({
    method: 'get',
    path: '/api/nodes/{id}',
    access: 'session',
    summary: 'One proxy node with its status',
    params: idParam('node'),
    responses: { 200: ok('the node', nodeSchema), 404: ok('no such node') },
  }),
  operation({
    method: 'put',
    path: '/api/nodes/{id}',
    access: 'admin',
    summary: 'Replace a proxy node (node 1: name and labels only)',
    params: idParam('node'),
    body: nodeBody,
    responses: { 200: ok('the node', nodeSchema), 404: ok('no such node'), 409: ok('the name, the admin URL or the bouncer key is taken') },
  }),
  operation({
    method: 'delete',
    path: '/api/nodes/{id}',
    access: 'admin',
    summary: 'Remove a proxy node from the rollout (its Caddy keeps what it holds)',
    params: idParam('node'),
    responses: { 204: noContent(), 404: ok('no such node'), 409: ok('node 1 cannot be removed') },
  }),
]
