import { createECDH } from 'node:crypto'
import { readFileSync } from 'node:fs'
import Ajv2020 from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { buildOpenApiDocument } from '../../server/utils/openapi/document'
import { createTestPki } from './certs'
import { buildNpmDatabase } from './npm-db'
import { ADMIN, type PanelHandle } from './panel'

// Walking the OpenAPI document: one schema-valid example request per operation
// (checked against the document with ajv before it is sent), the fixtures the
// examples point at, invalid variants generated from the document's own
// schemas, and a snapshot of every table an accepted request could change.
// Used by tests/integration/openapi.contract.test.ts (every operation) and
// tests/integration/validation.bad-bodies.test.ts (every JSON body).

type JsonSchema = Record<string, any>
export interface DocumentedOperation {
  method: string
  template: string
  parameters: Array<{ name: string; in: 'path' | 'query'; required: boolean; schema: JsonSchema }>
  bodySchema?: JsonSchema
  multipart: boolean
  statuses: number[]
  /** Needs no session (login, setup, OIDC, ForwardAuth). */
  public: boolean
  /** Who may call it, as the document declares (`x-access`; server/utils/openapi/registry.ts, Access). */
  access: string
}

const doc = buildOpenApiDocument()
const ajv = new (Ajv2020 as any)({ strict: false, allErrors: true })
;(addFormats as any)(ajv)
ajv.addSchema({ $id: 'panel-openapi', components: doc.components })
const _compiled = new Map<string, (v: unknown) => boolean>()

/** Whether `value` satisfies `schema` as the document states it (ajv, draft 2020-12). */
export function documentAccepts(schema: JsonSchema, value: unknown): boolean {
  const key = JSON.stringify(schema)
  let validate = _compiled.get(key)
  if (!validate) {
    validate = ajv.compile(JSON.parse(key.replaceAll('"#/components/', '"panel-openapi#/components/'))) as (v: unknown) => boolean
    _compiled.set(key, validate)
  }
  return validate(value)
}

/** A query or path value (always text on the wire) against its parameter schema: numbers are read as numbers. */
export function documentAcceptsParameter(schema: JsonSchema, value: string): boolean {
  const numeric = schema.type === 'integer' || schema.type === 'number'
  return documentAccepts(schema, numeric && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value)
}

export function documentedOperations(): DocumentedOperation[] {
  const out: DocumentedOperation[] = []
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item as Record<string, any>)) {
      const content = op.requestBody?.content ?? {}
      out.push({
        method: method.toUpperCase(),
        template,
        parameters: op.parameters ?? [],
        bodySchema: content['application/json']?.schema,
        multipart: !!content['multipart/form-data'],
        statuses: Object.keys(op.responses)
          .filter((s) => s !== 'default')
          .map(Number),
        public: op.security.length === 0,
        access: op['x-access'],
      })
    }
  }
  return out
}

export interface Fixtures {
  groupId: number
  hostId: number
  ruleId: number
  userId: number
  channelId: number
  notificationRuleId: number
  accessListId: number
  streamId: number
  npmDatabase: Buffer
}

/** The objects the examples point at, created through the API. */
export async function createFixtures(panel: PanelHandle, cookie: string): Promise<Fixtures> {
  const post = async (path: string, body: unknown) => {
    const res = await panel.request(path, { method: 'POST', cookie, body })
    if (res.status !== 201) throw new Error(`fixture ${path}: ${res.status} ${res.text}`)
    return res.json.id as number
  }
  const groupId = await post('/api/target-groups', { name: 'walk-group', targets: [{ address: '127.0.0.1:9' }] })
  const hostId = await post('/api/hosts', { domain: 'walk.example.test', target_group_id: groupId, tls_mode: 'none' })
  const ruleId = await post(`/api/hosts/${hostId}/rules`, { path: '/walk/*', action: 'respond', respond_status: 200, respond_body: 'walk' })
  const userId = await post('/api/users', { email: 'walk-viewer@example.test', password: 'walk-viewer-pass-1', role: 'viewer' })
  const channelId = await post('/api/notifications/channels', {
    name: 'walk-hook',
    type: 'webhook',
    config: { url: 'http://127.0.0.1:9/hook' },
  })
  const notificationRuleId = await post('/api/notifications/rules', {
    name: 'walk-rule',
    events: ['backup_failed'],
    channel_ids: [channelId],
  })
  const accessListId = await post('/api/access-lists', { name: 'walk-list', ip_rules: [{ action: 'allow', source: '192.0.2.0/24' }] })
  // Disabled: it holds its port for the conflict checks and opens no listener.
  const streamId = await post('/api/streams', {
    name: 'walk-stream',
    protocol: 'tcp',
    listen_port: 9,
    target_group_id: groupId,
    enabled: false,
  })
  // An nginx-proxy-manager database with its schema and no rows: the import's dry run reads it and finds nothing.
  const npmDatabase = readFileSync(await buildNpmDatabase({}))
  return { groupId, hostId, ruleId, userId, channelId, notificationRuleId, accessListId, streamId, npmDatabase }
}

export interface ExampleRequest {
  params?: Record<string, string>
  query?: Record<string, string>
  body?: unknown
  form?: () => FormData
  /** Statuses other than 2xx this example may get for a documented semantic reason (no row, component down...). */
  refusals?: number[]
  /** An event stream that never ends: only its refusals are walked. */
  stream?: boolean
}

const MISSING = '999999'

/**
 * The one form of a validation message (docs/api.md, Errors): "<field path>: <sentence>", the path
 * dotted (targets.0.address), `body` or `query` for the whole value; the UI reads the field from it
 * with one function (ui/src/fields.ts, parseFieldError).
 */
export const FIELD_ERROR_FORM = /^(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*): \S/

// Well-formed WebAuthn answers (base64url fields) that answer no challenge of the panel.
const _walkCredential = { id: 'd2Fsaw', rawId: 'd2Fsaw', type: 'public-key', clientExtensionResults: {} }
const _walkRegistration = { ..._walkCredential, response: { clientDataJSON: 'e30', attestationObject: 'oA' } }
const _walkAssertion = { ..._walkCredential, response: { clientDataJSON: 'e30', authenticatorData: 'AA', signature: 'AA' } }

/** One schema-valid request per operation, keyed "METHOD /template". */
export function exampleRequests(f: Fixtures, admin: { email: string; password: string } = ADMIN): Record<string, ExampleRequest> {
  const host = { domain: 'walk-example.example.test', target_group_id: f.groupId, tls_mode: 'none' }
  const rule = { path: '/example/*', action: 'redirect', redirect_url: 'https://walk.example.test/new', redirect_status: 301 }
  const channel = { name: 'walk-example-hook', type: 'webhook', config: { url: 'http://127.0.0.1:9/example' } }
  const notificationRule = { name: 'walk-example-rule', events: ['backup_failed'], channel_ids: [f.channelId] }
  return {
    'GET /api/setup': {},
    'POST /api/setup': { body: { email: 'second@example.test', password: 'second-password-1', name: 'Second' }, refusals: [409] },
    'POST /api/auth/login': { body: { email: admin.email, password: admin.password } },
    'POST /api/auth/login/totp': { body: { code: '123456' }, refusals: [401] },
    'POST /api/auth/totp/setup': { body: {} },
    // A code that does not match is a documented 400; disabling TOTP that is off a documented 409.
    'POST /api/auth/totp/enable': { body: { code: '000000' }, refusals: [400] },
    'POST /api/auth/totp/disable': { body: { code: '000000' }, refusals: [409] },
    'POST /api/auth/totp/recovery-codes': { body: { code: '000000' }, refusals: [409] },
    // Passkeys: options are real; answers made up here verify against nothing (no challenge, no such key).
    'GET /api/auth/passkeys': {},
    'POST /api/auth/passkeys/options': { body: {} },
    'POST /api/auth/passkeys': { body: { name: 'Walk key', response: _walkRegistration }, refusals: [400] },
    'PUT /api/auth/passkeys/{id}': { params: { id: MISSING }, body: { name: 'Walk key' }, refusals: [404] },
    'DELETE /api/auth/passkeys/{id}': { params: { id: MISSING }, refusals: [404] },
    'POST /api/auth/passkeys/login/options': { body: {} },
    'POST /api/auth/passkeys/login': { body: { response: _walkAssertion }, refusals: [401] },
    'POST /api/auth/login/passkey/options': { body: {}, refusals: [401] },
    'POST /api/auth/login/passkey': { body: { response: _walkAssertion }, refusals: [401] },
    'GET /api/auth/oidc/login': { query: { rd: '/logs' } },
    'GET /api/auth/oidc/callback': { query: { code: 'abc', state: 'unknown-state' } },
    'POST /api/auth/logout': {},
    'GET /api/auth/session': {},
    'GET /api/auth/providers': {},
    'GET /auth/forward': {},
    // Strict session mode's exchange: off in the walk's panel, so both say so.
    'GET /auth/forward/start': { query: { rd: 'https://walk.example.test/' }, refusals: [404] },
    'GET /auth/forward/callback': { query: { code: 'walk', rd: '/' }, refusals: [404] },
    'GET /api/hosts': {},
    'POST /api/hosts': { body: host },
    'GET /api/hosts/{id}': { params: { id: String(f.hostId) } },
    'PUT /api/hosts/{id}': {
      params: { id: String(f.hostId) },
      body: { ...host, domain: 'walk.example.test', waf_enabled: true, waf_mode: 'detection' },
    },
    'DELETE /api/hosts/{id}': { params: { id: MISSING }, refusals: [404] },
    'POST /api/hosts/{id}/toggle': { params: { id: MISSING }, refusals: [404] },
    'GET /api/hosts/{id}/rules': { params: { id: String(f.hostId) } },
    'GET /api/hosts/{id}/dns-delegation': { params: { id: String(f.hostId) }, refusals: [400] },
    // The walk's host does not use DNS-01: the documented 400 (the check itself: dns.host-check.test.ts).
    'GET /api/hosts/{id}/dns-check': { params: { id: String(f.hostId) }, refusals: [400] },
    'POST /api/hosts/{id}/dns-check': { params: { id: String(f.hostId) }, refusals: [400] },
    'POST /api/hosts/{id}/rules': { params: { id: String(f.hostId) }, body: rule },
    'PUT /api/rules/{id}': {
      params: { id: String(f.ruleId) },
      body: { path: '/walk/*', action: 'respond', respond_status: 410, respond_body: 'gone\nfor good' },
    },
    'DELETE /api/rules/{id}': { params: { id: MISSING }, refusals: [404] },
    'GET /api/waf/catalogue': {},
    'GET /api/hosts/{id}/waf-exclusions': { params: { id: String(f.hostId) } },
    'POST /api/hosts/{id}/waf-exclusions': { params: { id: String(f.hostId) }, body: { rule_id: 942100, path: '/api/*', note: 'walk' } },
    'POST /api/logs/{id}/waf-exclusion': { params: { id: MISSING }, body: { scope: 'host' }, refusals: [404] },
    'DELETE /api/waf-exclusions/{id}': { params: { id: MISSING }, refusals: [404] },
    'GET /api/logs/{id}/waf-unblock': { params: { id: MISSING }, refusals: [404] },
    'POST /api/logs/{id}/waf-unblock': { params: { id: MISSING }, body: { scope: 'path', rule_ids: [942100] }, refusals: [404] },
    'GET /api/hosts/{id}/waf-exclusion-preview': {
      params: { id: String(f.hostId) },
      query: { rule_ids: '942100,942190', path: '/search' },
    },
    'GET /api/target-groups': {},
    'POST /api/target-groups': {
      body: { name: 'walk-example-group', targets: [{ address: '[::1]:8080', weight: 2 }], lb_policy: 'least_conn' },
    },
    'GET /api/target-groups/{id}': { params: { id: String(f.groupId) } },
    'PUT /api/target-groups/{id}': {
      params: { id: String(f.groupId) },
      body: { name: 'walk-group', targets: [{ address: '127.0.0.1:10' }], health_check: { path: '/healthz' } },
    },
    'DELETE /api/target-groups/{id}': { params: { id: MISSING }, refusals: [404] },
    'GET /api/dns-providers': {},
    'GET /api/dns-providers/{name}': { params: { name: 'provider_c' } },
    'PUT /api/dns-providers/{name}': { params: { name: 'provider_a' }, body: { enabled: false } },
    // No credentials stored for provider_b in the walk: the documented 400 (the check itself: dns.check.test.ts).
    'POST /api/dns-providers/{name}/test': { params: { name: 'provider_b' }, body: { zone: 'example.test' }, refusals: [400] },
    'GET /api/manual-certs': {},
    'GET /api/manual-certs/{host_id}': { params: { host_id: MISSING }, refusals: [404] },
    'POST /api/manual-certs/{host_id}': {
      params: { host_id: String(f.hostId) },
      form: () => {
        const pki = createTestPki()
        const leaf = pki.leaf('walk.example.test')
        const form = new FormData()
        form.append('cert_pem', new Blob([leaf.certPem]), 'cert.pem')
        form.append('key_pem', new Blob([leaf.keyPem]), 'key.pem')
        form.append('chain_pem', new Blob([pki.intermediatePem]), 'chain.pem')
        return form
      },
    },
    'DELETE /api/manual-certs/{host_id}': { params: { host_id: MISSING }, query: { revert: 'none' }, refusals: [404] },
    'GET /api/manual-certs/{host_id}/download': { params: { host_id: MISSING }, refusals: [404] },
    // No local API in this walk: the engine's operations answer their documented 503.
    'GET /api/security/decisions': { query: { scope: 'Ip', limit: '10' }, refusals: [503] },
    'GET /api/security/decisions/origins': { query: { scope: 'Range', q: '192.0.2' }, refusals: [503] },
    'POST /api/security/decisions': { body: { value: '192.0.2.10', duration: '4h', reason: 'walk' }, refusals: [503] },
    'DELETE /api/security/decisions/{id}': { params: { id: MISSING }, refusals: [503] },
    'GET /api/security/decisions/unban-ip': { query: { ip: '192.0.2.10' }, refusals: [503] },
    'POST /api/security/decisions/unban-ip': { body: { ip: '192.0.2.10' }, refusals: [503] },
    'GET /api/security/whitelist': {},
    'POST /api/security/whitelist': { body: { value: '192.0.2.0/28', reason: 'walk' }, refusals: [503] },
    'DELETE /api/security/whitelist/{value}': { params: { value: '198.51.100.0%2F24' }, refusals: [404, 503] },
    'GET /api/security/scenarios': {},
    'PATCH /api/security/scenarios/{name}': { params: { name: 'crowdsecurity%2Fhttp-probing' }, body: { disabled: true }, refusals: [503] },
    'GET /api/security/drift': {},
    // No engine folder in this walk (CROWDSEC_CONFIG_DIR unset): the documented 503.
    'GET /api/security/bouncers': { refusals: [503] },
    'GET /api/security/machines': { refusals: [503] },
    'GET /api/security/appsec-tuning': {},
    'PUT /api/security/appsec-tuning': { body: { inbound_threshold: 5, outbound_threshold: 4 }, refusals: [503] },
    'GET /api/security/check-self': { refusals: [503] },
    'GET /api/security/overview': {},
    'POST /api/security/countries/{cc}/expand': { params: { cc: 'FR' }, body: { duration: '24h', reason: 'walk' }, refusals: [503] },
    'GET /api/security/countries': {},
    'DELETE /api/security/countries/{cc}': { params: { cc: 'FR' }, refusals: [404, 503] },
    'GET /api/security/jobs': { query: { country: 'FR', limit: '5' } },
    'GET /api/security/jobs/{id}': { params: { id: MISSING }, refusals: [404] },
    'GET /api/security/countries/{cc}/preview': { params: { cc: 'FR' }, query: { days: '3' } },
    'POST /api/access/preview': {
      body: {
        policy: { rules: [{ action: 'allow', countries: ['FR'], cidrs: ['192.0.2.0/24'] }], default: 'deny' },
        host_id: f.hostId,
        days: 7,
      },
    },
    'GET /api/geoip/lookup': { query: { ip: '192.168.1.1' } },
    'GET /api/geoip/asns': { query: { q: 'AS64500', limit: '5' } },
    'GET /api/geoip/status': {},
    // The panel's geolocation URLs point at a closed loopback port (tests/support/panel.ts).
    'POST /api/geoip/refresh': { refusals: [502] },
    'GET /api/logs': { query: { source: 'caddy_access,audit', status: '4xx,500-504', limit: '10' } },
    'GET /api/logs/{id}': { params: { id: MISSING }, refusals: [404] },
    'GET /api/logs/stats': { query: { host_id: String(f.hostId), from: '2026-01-01T00:00:00Z' } },
    'GET /api/logs/timeseries': { query: { bucket: 'day', waf_rule_id: '942100' } },
    // A valid filter opens the stream, which never ends: the walk checks only that a bad one is refused.
    'GET /api/logs/tail': { query: { source: 'caddy_access' }, stream: true },
    'GET /api/notifications/push/public-key': {},
    'GET /api/notifications/push/subscriptions': {},
    'POST /api/notifications/push/subscriptions': {
      body: {
        endpoint: 'https://push.example.test/send/walk',
        expirationTime: null,
        // A point on P-256, as a browser sends (the panel checks the curve).
        keys: { p256dh: createECDH('prime256v1').generateKeys().toString('base64url'), auth: 'A'.repeat(22) },
      },
    },
    'DELETE /api/notifications/push/subscriptions/{id}': { params: { id: MISSING }, refusals: [404] },
    'GET /api/notifications/channels': {},
    'POST /api/notifications/channels': { body: channel },
    'PUT /api/notifications/channels/{id}': {
      params: { id: String(f.channelId) },
      body: { name: 'walk-hook', type: 'webhook', config: { url: 'http://127.0.0.1:9/hook2' } },
    },
    'DELETE /api/notifications/channels/{id}': { params: { id: MISSING }, refusals: [404] },
    'POST /api/notifications/channels/{id}/test': { params: { id: String(f.channelId) }, refusals: [502] },
    'GET /api/notifications/rules': {},
    'POST /api/notifications/rules': { body: notificationRule },
    'PUT /api/notifications/rules/{id}': {
      params: { id: String(f.notificationRuleId) },
      body: { ...notificationRule, name: 'walk-rule', throttle_seconds: 60 },
    },
    'DELETE /api/notifications/rules/{id}': { params: { id: MISSING }, refusals: [404] },
    'GET /api/tokens': {},
    'POST /api/tokens': { body: { name: 'walk script', scope: 'read', expires_in_days: 30 } },
    'DELETE /api/tokens/{id}': { params: { id: MISSING }, refusals: [404] },
    'GET /api/access-lists': {},
    'POST /api/access-lists': {
      body: {
        name: 'walk-example-list',
        default_action: 'deny',
        ip_rules: [{ action: 'allow', source: '198.51.100.0/24' }],
        users: [{ username: 'walker', password: 'walker-pass-1' }],
      },
    },
    'GET /api/access-lists/{id}': { params: { id: String(f.accessListId) } },
    'PUT /api/access-lists/{id}': {
      params: { id: String(f.accessListId) },
      body: { name: 'walk-list', ip_rules: [{ action: 'deny', source: '2001:db8::/32' }] },
    },
    'DELETE /api/access-lists/{id}': { params: { id: MISSING }, refusals: [404] },
    'GET /api/streams': {},
    // A walk may send it more than once: the second finds its name and port taken.
    'POST /api/streams': {
      body: {
        name: 'walk-example-stream',
        protocol: 'udp',
        listen_port: 5353,
        target_group_id: f.groupId,
        enabled: false,
        udp_probe_hex: '00',
      },
      refusals: [409],
    },
    'GET /api/streams/{id}': { params: { id: String(f.streamId) } },
    'PUT /api/streams/{id}': {
      params: { id: String(f.streamId) },
      body: { name: 'walk-stream', protocol: 'tcp', listen_port: 10, target_group_id: f.groupId },
    },
    'DELETE /api/streams/{id}': { params: { id: MISSING }, refusals: [404] },
    'GET /api/streams/health': {},
    'GET /api/nodes': {},
    // Disabled: the walk's other pushes do not try a node where nothing listens.
    'POST /api/nodes': { body: { name: 'walk-node', admin_url: 'http://127.0.0.1:9', labels: ['walk'], enabled: false } },
    'GET /api/nodes/{id}': { params: { id: '1' } },
    'PUT /api/nodes/{id}': { params: { id: '1' }, body: { name: 'node-1', labels: ['canary', 'walk'] } },
    'DELETE /api/nodes/{id}': { params: { id: MISSING }, refusals: [404] },
    'PUT /api/hosts/{id}/access-list': { params: { id: String(f.hostId) }, body: { access_list_id: f.accessListId } },
    // The walk's panel may have no caddy binary for `caddy adapt`: a documented 503.
    'POST /api/import/caddyfile': {
      body: { caddyfile: 'walk-import.example.test {\n\treverse_proxy 127.0.0.1:9\n}\n', apply: false },
      refusals: [503],
    },
    'POST /api/import/npm': {
      form: () => {
        const form = new FormData()
        form.append('database', new Blob([new Uint8Array(f.npmDatabase)]), 'database.sqlite')
        return form
      },
    },
    'GET /api/revisions': {},
    'GET /api/revisions/{id}': { params: { id: MISSING }, refusals: [404] },
    'GET /api/revisions/diff': { query: { from: MISSING, to: MISSING }, refusals: [404] },
    'POST /api/revisions/{id}/revert': { params: { id: MISSING }, refusals: [404] },
    'POST /api/revisions/{id}/undo': { params: { id: MISSING }, refusals: [404] },
    'GET /api/system/gates': {},
    'GET /api/system/forward-auth-check': { refusals: [502] },
    'GET /api/backups': {},
    'POST /api/backups': {},
    'GET /api/backups/{id}/download': { params: { id: MISSING }, refusals: [404] },
    'DELETE /api/backups/{id}': { params: { id: MISSING }, refusals: [404] },
    'POST /api/backups/{id}/restore': { params: { id: MISSING }, refusals: [404] },
    // Not a backup: refused before anything is replaced (a real one would end the walk's sessions).
    'POST /api/backups/restore': {
      form: () => {
        const form = new FormData()
        form.append('backup', new Blob([new TextEncoder().encode('not a backup')]), 'walk.db.gz')
        return form
      },
      refusals: [400],
    },
    'GET /api/dashboard/traffic': {},
    'GET /api/dashboard/security': {},
    'GET /api/dashboard/health': {},
    'GET /healthz': {},
    'GET /api/system/health': {},
    'GET /api/settings': {},
    'PUT /api/settings': {
      body: { 'logs.retention_days': 30, 'acme.email': 'ops@example.test', 'oidc.issuer': '', 'smtp.password': '__UNCHANGED__' },
    },
    'GET /api/openapi.json': {},
    'GET /api/docs': {},
    'GET /api/users': {},
    'GET /api/users/groups': {},
    'POST /api/users': { body: { email: 'walk-example@example.test', password: 'walk-example-pass-1', name: 'Walk', role: 'viewer' } },
    'GET /api/users/{id}': { params: { id: String(f.userId) } },
    'PUT /api/users/{id}': {
      params: { id: String(f.userId) },
      body: { email: 'walk-viewer@example.test', name: 'Walk viewer', role: 'viewer' },
    },
    'DELETE /api/users/{id}': { params: { id: MISSING }, refusals: [404] },
  }
}

/** The request path of an operation with its example's parameters and query. */
export function pathOf(op: DocumentedOperation, params: Record<string, string> = {}, query: Record<string, string> = {}): string {
  const path = op.template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    if (params[name] === undefined) throw new Error(`${op.method} ${op.template}: the example has no value for {${name}}`)
    return params[name]!
  })
  const search = new URLSearchParams(query).toString()
  return search ? `${path}?${search}` : path
}

/** A schema with its component reference followed and its `null` alternative dropped. */
function _concreteSchema(raw: JsonSchema): JsonSchema {
  const picked = raw.anyOf?.find((s: JsonSchema) => s.type !== 'null') ?? raw
  const ref = typeof picked.$ref === 'string' ? picked.$ref.match(/^#\/components\/schemas\/(.+)$/) : null
  return ref ? _concreteSchema((doc.components.schemas as Record<string, JsonSchema>)[ref[1]!]!) : picked
}

function _isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** Invalid variants of one object level, and of every object (or first array item) nested in it. */
function _invalidObjects(schema: JsonSchema, valid: Record<string, unknown>, where: string): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [[`an unknown field${where}`, { ...valid, walk_unknown_field: 1 }]]
  if (Array.isArray(schema.required) && schema.required.length) {
    const { [schema.required[0]]: _gone, ...rest } = valid
    out.push([`no ${schema.required[0]}${where}`, rest])
  }
  for (const [name, raw] of Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>)) {
    const prop = _concreteSchema(raw)
    const at = (what: string) => `${name} ${what}${where}`
    out.push([
      at(prop.type === 'string' ? 'of the wrong type (a number)' : 'of the wrong type (text)'),
      { ...valid, [name]: prop.type === 'string' ? 12345 : 'walk-not-a-number' },
    ])
    if (typeof prop.maxLength === 'number')
      out.push([at(`over ${prop.maxLength} characters`), { ...valid, [name]: 'a'.repeat(prop.maxLength + 1) }])
    if (prop.enum) out.push([at('outside its enum'), { ...valid, [name]: 'walk-not-a-choice' }], [at('empty'), { ...valid, [name]: '' }])
    if (prop.pattern || prop.allOf || prop.format)
      out.push([at('with a control character'), { ...valid, [name]: `${typeof valid[name] === 'string' ? valid[name] : 'x'}\u0001` }])
    if (typeof prop.minimum === 'number') out.push([at(`under ${prop.minimum}`), { ...valid, [name]: prop.minimum - 1 }])
    if (typeof prop.maximum === 'number') out.push([at(`over ${prop.maximum}`), { ...valid, [name]: prop.maximum + 1 }])
    const value = valid[name]
    if (prop.properties && _isPlainObject(value)) {
      for (const [what, inner] of _invalidObjects(prop, value, ` in ${name}${where}`)) out.push([what, { ...valid, [name]: inner }])
    }
    const items = prop.type === 'array' && prop.items ? _concreteSchema(prop.items) : undefined
    if (items?.properties && Array.isArray(value) && _isPlainObject(value[0])) {
      for (const [what, inner] of _invalidObjects(items, value[0], ` in ${name}[0]${where}`))
        out.push([what, { ...valid, [name]: [inner, ...value.slice(1)] }])
    }
  }
  return out
}

/**
 * Bodies the document refuses, made from a valid one: each comes with what was broken. Nested objects
 * (and the first item of an array of objects) get the same variants as the top level.
 */
export function invalidBodies(schema: JsonSchema, valid: Record<string, unknown>): Array<[string, unknown]> {
  // Only what the document itself refuses is a fair test of the server.
  return _invalidObjects(_concreteSchema(schema), valid, '').filter(([, body]) => !documentAccepts(schema, body))
}

/** Query strings the document refuses, made from a valid one. */
export function invalidQueries(op: DocumentedOperation, valid: Record<string, string>): Array<[string, Record<string, string>]> {
  const out: Array<[string, Record<string, string>]> = []
  for (const p of op.parameters.filter((x) => x.in === 'query')) {
    const s = p.schema
    if (s.enum)
      out.push([`${p.name} empty`, { ...valid, [p.name]: '' }], [`${p.name} outside its enum`, { ...valid, [p.name]: 'walk-not-a-choice' }])
    if (typeof s.maxLength === 'number')
      out.push([`${p.name} over ${s.maxLength} characters`, { ...valid, [p.name]: 'a'.repeat(s.maxLength + 1) }])
    if (s.pattern || s.allOf) out.push([`${p.name} against its pattern`, { ...valid, [p.name]: 'walk;not valid' }])
  }
  return out.filter(([, q]) =>
    op.parameters.some((p) => p.in === 'query' && q[p.name] !== undefined && !documentAcceptsParameter(p.schema, q[p.name]!)),
  )
}

const _SNAPSHOT_TABLES = [
  'settings',
  'users',
  'totp_recovery_codes',
  'passkeys',
  'target_groups',
  'hosts',
  'host_names',
  'rules',
  'waf_exclusions',
  'dns_providers',
  'manual_certs',
  'whitelist_entries',
  'scenario_overrides',
  'country_jobs',
  'country_bans',
  'notification_channels',
  'notification_rules',
  'push_subscriptions',
  'streams',
]

/** Every stored object (and the audit trail) as text: equal before and after means nothing changed. */
export async function snapshotStore(panel: PanelHandle): Promise<string> {
  const db = panel.db()
  const parts: unknown[] = []
  for (const table of _SNAPSHOT_TABLES) parts.push(table, (await db.execute(`SELECT * FROM ${table} ORDER BY rowid`)).rows)
  parts.push('audit', (await db.execute("SELECT id, message, raw FROM logs WHERE source = 'audit' ORDER BY id")).rows)
  return JSON.stringify(parts)
}
