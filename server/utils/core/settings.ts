import { inArray } from 'drizzle-orm'
import { ERROR_PAGE_MESSAGE_MAX } from '../hosts/page-message'
import { isIP } from 'node:net'
import { Cron } from 'croner'
import { z, type ZodType } from 'zod'
import { settings } from '../../../db/schema'
import { getDb, writeTransaction, type Executor, type Tx } from './db'
import { badRequest } from './errors'
import { getConfig } from './config'
import { getSecretsBox } from './secrets'
import { writeAudit, type AuditContext } from './audit'
import { DEFAULT_COMPRESSION_MINIMUM_BYTES, DEFAULT_COMPRESSION_TYPES, NEVER_COMPRESSED_TYPES } from '../proxy/build/encode'
import { CONTENT_TYPE_PATTERN } from '../proxy/build/waf-rules'
import { describeZodError, emailSchema, parseGoDurationMs, safeText, urlSchema } from './validate'
import { allowedGroupsSchema, groupRolesSchema, groupsClaimSchema } from '../auth/oidc-groups'
import { proxyStorageSchema, type ProxyStorage } from '../proxy/storage/schemas'
import { ENCRYPTION_KEY_MIN_LENGTH, describeStorageForAudit, storageSettingsProblem } from '../proxy/storage/storage-config'

// One declaration per run-time setting drives validation, GET/PUT /api/settings
// and docs/configuration.md. Environment values are only defaults.

export const UNCHANGED = '__UNCHANGED__'
export const SECRET_SET = '__SET__'

const _goDuration = z.string().regex(/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/, 'must be a Go duration such as 15s, 1m or 2h30m')
// The bouncer refuses 0s at start ("lapi update interval must be positive") and
// takes 1ms as 1000 pulls a second; above 10 minutes a ban waits too long to bite.
const _TICKER_MIN_MS = 1_000,
  _TICKER_MAX_MS = 600_000
const _tickerInterval = _goDuration.refine((v) => {
  const ms = parseGoDurationMs(v)
  return ms !== null && ms >= _TICKER_MIN_MS && ms <= _TICKER_MAX_MS
}, 'must be from 1s to 10m (the bouncer polls the local API this often: 0s is refused by it, less than 1s floods the local API, more than 10m delays every ban)')
const _optionalUrl = z.union([z.literal(''), urlSchema()], { message: 'must be an http or https URL, or empty' })
// The pattern (five or six fields) is what the document can say; croner checks each field.
const _CRON_PROBLEM = 'must be a 5-field cron expression such as "0 2 * * *" (a leading seconds field is accepted)'
const _cron = z
  .string()
  .trim()
  .max(100)
  .regex(/^\s*\S+(\s+\S+){4,5}\s*$/, _CRON_PROBLEM)
  .refine((v) => {
    try {
      new Cron(v, { paused: true })
      return [5, 6].includes(v.split(/\s+/).length)
    } catch {
      return false
    }
  }, _CRON_PROBLEM)
const _text = (max: number) => safeText(max)
const _cidr = z
  .string()
  .trim()
  .toLowerCase()
  .max(64)
  .refine((v) => {
    const [addr, bits, extra] = v.split('/')
    const family = isIP(addr ?? '')
    return !!family && extra === undefined && (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128)))
  }, 'must be an IP address or a CIDR such as 192.0.2.0/24')
const _headerName = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/, 'must be an HTTP header name such as X-Forwarded-For')
const _int = (min: number, max: number) =>
  z.number().int('must be an integer').min(min, `must be at least ${min}`).max(max, `must be at most ${max}`)

interface SettingDef<T = unknown> {
  key: string
  schema: ZodType<T>
  default: () => T
  secret?: boolean
  /** The proxy configuration depends on it: a change reconciles. */
  affectsProxy?: boolean
  description: string
}

const _def = <T>(d: SettingDef<T>) => d as SettingDef<unknown>

export const SETTINGS_CATALOGUE: SettingDef[] = [
  _def({ key: 'logs.retention_days', schema: _int(1, 3650), default: () => 30, description: 'days log rows are kept' }),
  _def({
    key: 'logs.max_entries',
    schema: _int(1000, 100_000_000),
    default: () => 500_000,
    description: 'most log rows kept (audit rows included)',
  }),
  _def({
    key: 'logs.text_index',
    schema: z.boolean(),
    default: () => true,
    description:
      'keep a trigram index of every log row for the free-text filter (about 40 % more disk for the logs; off: the filter reads the rows)',
  }),
  _def({
    key: 'logs.waf_audit_max_bytes',
    schema: _int(65_536, 10 * 1024 ** 3),
    default: () => 64 * 1024 ** 2,
    description: "size past which the WAF audit log's already-ingested part is cut from the file",
  }),
  _def({ key: 'backup.schedule', schema: _cron, default: () => '0 2 * * *', description: 'cron (UTC) of scheduled backups' }),
  _def({ key: 'backup.retention_days', schema: _int(1, 3650), default: () => 14, description: 'days backups are kept' }),
  _def({
    key: 'security_engine.ticker_interval',
    schema: _tickerInterval,
    default: () => '15s',
    affectsProxy: true,
    description: "the bouncer's decision poll period (1s to 10m)",
  }),
  _def({
    key: 'proxy.trusted_proxies',
    schema: z.array(_cidr).max(100, 'must list at most 100 ranges'),
    default: () => [] as string[],
    affectsProxy: true,
    description:
      'addresses of the CDN or load balancer in front of the proxy; only from these is the client-address header believed (empty: none, every request is judged by its connection address)',
  }),
  _def({
    key: 'proxy.client_ip_headers',
    schema: z.array(_headerName).min(1, 'must name at least one header').max(4, 'must name at most 4 headers'),
    default: () => ['X-Forwarded-For'],
    affectsProxy: true,
    description: 'headers a trusted proxy puts the client address in, first found wins (X-Forwarded-For, CF-Connecting-IP, X-Real-IP ...)',
  }),
  _def({
    key: 'proxy.compression',
    schema: z.boolean(),
    // A new panel compresses; migration 0039 records false for a database that predates it.
    default: () => true,
    affectsProxy: true,
    description: "compress answers with zstd or gzip for every host that follows this setting (a host's own choice wins)",
  }),
  _def({
    key: 'proxy.error_pages',
    schema: z.boolean(),
    // A new panel answers pages; migration 0041 records false for a database that predates them.
    default: () => true,
    affectsProxy: true,
    description:
      "answer refusals (403, 429) and upstream failures (502, 503, 504) with a page naming the host, the time and the request id, for every host that follows this setting (a host's own choice wins)",
  }),
  _def({
    key: 'proxy.unknown_host_answer',
    schema: z.enum(['404', '421', 'close'], { message: 'must be 404, 421 or close' }),
    // '404' is the answer of before the setting (421 on HTTPS), so an upgrade changes nothing.
    default: () => '404',
    affectsProxy: true,
    description:
      'what a request for a host name no enabled host has gets: 404 (421 on HTTPS), 421 Misdirected Request, or close (the connection is closed without an answer)',
  }),
  _def({
    key: 'proxy.error_page_message',
    schema: z
      .string()
      .trim()
      .max(ERROR_PAGE_MESSAGE_MAX, `must be at most ${ERROR_PAGE_MESSAGE_MAX} characters`)
      .regex(/^[^\u0000-\u001f\u007f]*$/, 'must be one line of text without control characters'),
    default: () => '',
    affectsProxy: true,
    description: "a short message shown on every host's pages (plain text; a host's own message wins; empty: none)",
  }),
  _def({
    key: 'proxy.compression_types',
    schema: z
      .array(
        z
          .string()
          .trim()
          .toLowerCase()
          .regex(CONTENT_TYPE_PATTERN, 'must be a media type such as text/html or application/json (no parameters, spaces or wildcards)')
          .refine(
            (t) => !NEVER_COMPRESSED_TYPES.includes(t),
            `must not be a streaming type (${NEVER_COMPRESSED_TYPES.join(', ')}): compressing it would hold its messages back`,
          ),
      )
      .min(1, 'must list at least one media type (turn proxy.compression off to compress nothing)')
      .max(100, 'must list at most 100 media types')
      .refine((a) => new Set(a).size === a.length, 'must not repeat a media type'),
    default: () => [...DEFAULT_COMPRESSION_TYPES],
    affectsProxy: true,
    description: 'media types whose answers are compressed (a charset parameter is ignored)',
  }),
  _def({
    key: 'proxy.compression_minimum_bytes',
    schema: _int(0, 10 * 1024 * 1024),
    default: () => DEFAULT_COMPRESSION_MINIMUM_BYTES,
    affectsProxy: true,
    description: 'answers shorter than this many bytes are sent uncompressed (compressing them gains nothing)',
  }),
  _def({
    key: 'proxy.storage',
    schema: proxyStorageSchema,
    default: () => ({ module: 'file_system' }) as ProxyStorage,
    affectsProxy: true,
    description:
      'where every proxy node keeps certificates, ACME accounts and locks: {"module": "file_system"} (PROXY_DATA_DIR, a folder shared by all nodes) or {"module": "redis", ...} (docs/scaling.md); switching makes the nodes look for certificates in the new storage: copy them first',
  }),
  _def({
    key: 'proxy.storage.redis_password',
    schema: _text(1024),
    default: () => '',
    secret: true,
    affectsProxy: true,
    description: "password of the Redis servers of proxy.storage (with its username: Redis's AUTH)",
  }),
  _def({
    key: 'proxy.storage.sentinel_password',
    schema: _text(1024),
    default: () => '',
    secret: true,
    affectsProxy: true,
    description: "password of the Sentinels of proxy.storage (sentinel mode; Sentinel's requirepass)",
  }),
  _def({
    key: 'proxy.storage.encryption_key',
    schema: z.union([
      z.literal(''),
      _text(1024).refine((v) => v.length >= ENCRYPTION_KEY_MIN_LENGTH, `must be at least ${ENCRYPTION_KEY_MIN_LENGTH} characters`),
    ]),
    default: () => '',
    secret: true,
    affectsProxy: true,
    description: `key every value of the Redis storage is sealed with when proxy.storage has "encrypt": true (at least ${ENCRYPTION_KEY_MIN_LENGTH} characters; changing it makes what is stored unreadable: certificates are obtained again)`,
  }),
  _def({
    key: 'acme.email',
    schema: z.union([z.literal(''), emailSchema]),
    default: () => '',
    affectsProxy: true,
    description: 'default ACME account email',
  }),
  _def({
    key: 'acme.ca_url',
    schema: _optionalUrl,
    default: () => '',
    affectsProxy: true,
    description: 'default ACME directory URL (empty: the proxy default)',
  }),
  _def({
    key: 'appsec.inbound_threshold',
    schema: _int(1, 10_000),
    default: () => 5,
    affectsProxy: true,
    description: 'CRS inbound anomaly threshold (engine AppSec and proxy WAF)',
  }),
  _def({
    key: 'appsec.outbound_threshold',
    schema: _int(1, 10_000),
    default: () => 4,
    affectsProxy: true,
    description: 'CRS outbound anomaly threshold (engine AppSec and proxy WAF)',
  }),
  _def({
    key: 'revisions.retention_count',
    schema: _int(2, 10_000),
    default: () => 100,
    description: 'how many revisions of the proxy configuration are kept (the oldest go first)',
  }),
  _def({
    key: 'auth.strict_sessions',
    schema: z.boolean(),
    default: () => false,
    affectsProxy: true,
    description:
      "strict session mode (a deviation from the interface the operator chooses, docs/auth.md): the panel's session cookie is host-only on the panel's name and SameSite=Strict, and each ForwardAuth host gets its own credential, good for /auth/forward only, on any domain; a change ends every session",
  }),
  _def({ key: 'oidc.issuer', schema: _optionalUrl, default: () => '', description: 'OIDC issuer URL (empty: OIDC off)' }),
  _def({ key: 'oidc.client_id', schema: _text(256), default: () => '', description: 'OIDC client id' }),
  _def({ key: 'oidc.client_secret', schema: _text(1024), default: () => '', secret: true, description: 'OIDC client secret' }),
  _def({
    key: 'oidc.allowed_emails',
    schema: z.array(emailSchema).max(1000),
    default: () => [] as string[],
    description: 'emails allowed to log in with OIDC (empty: any)',
  }),
  _def({
    key: 'oidc.require_email_verified',
    schema: z.boolean(),
    default: () => true,
    description: 'refuse OIDC users whose email is not verified',
  }),
  _def({ key: 'oidc.display_name', schema: _text(64), default: () => 'Single sign-on', description: 'label of the OIDC login button' }),
  _def({
    key: 'oidc.groups_claim',
    schema: groupsClaimSchema,
    default: () => 'groups',
    description:
      "the id_token claim that carries the user's groups (a string or a list; a dotted name such as realm_access.roles reads a nested claim); stored at every login and read by the groups mapping and by protected hosts",
  }),
  _def({
    key: 'oidc.group_roles',
    schema: groupRolesSchema,
    default: () => ({}) as Record<string, string>,
    description:
      'role each group gives at every OIDC login: admin, viewer or none (no access); none beats admin, admin beats viewer, a user in no mapped group is a viewer (empty: roles are kept as edited by hand, new users are viewers)',
  }),
  _def({
    key: 'oidc.allowed_groups',
    schema: allowedGroupsSchema,
    default: () => [] as string[],
    description: 'groups allowed to sign in to the panel with OIDC (empty: anyone the identity provider admits)',
  }),
  _def({ key: 'smtp.host', schema: _text(253), default: () => '', description: 'SMTP server host' }),
  _def({ key: 'smtp.port', schema: _int(1, 65535), default: () => 587, description: 'SMTP server port' }),
  _def({ key: 'smtp.username', schema: _text(256), default: () => '', description: 'SMTP user name' }),
  _def({ key: 'smtp.password', schema: _text(1024), default: () => '', secret: true, description: 'SMTP password' }),
  _def({
    key: 'smtp.from',
    schema: z.union([z.literal(''), emailSchema]),
    default: () => '',
    description: 'sender address of notification mail',
  }),
  _def({
    key: 'geoip.country_url',
    schema: _optionalUrl,
    default: () => getConfig().geoip.countryUrl,
    description: 'where country.mmdb is downloaded from',
  }),
  _def({
    key: 'geoip.asn_url',
    schema: _optionalUrl,
    default: () => getConfig().geoip.asnUrl,
    description: 'where asn.mmdb is downloaded from',
  }),
]

const _byKey = new Map(SETTINGS_CATALOGUE.map((d) => [d.key, d]))

/**
 * PUT /api/settings: any subset of the catalogue's keys, each with its own
 * schema (a secret also takes "__UNCHANGED__"); the route and the document use it.
 */
export const settingsPatchBody = z.strictObject(
  Object.fromEntries(
    SETTINGS_CATALOGUE.map((d) => [
      d.key,
      (d.secret ? z.union([z.literal(UNCHANGED), d.schema]) : d.schema).optional().describe(d.description),
    ]),
  ),
)
const _owner = (key: string) => `settings/${key}`

type CommitHook = (tx: Tx, changedKeys: string[], ctx: AuditContext) => Promise<void>
const _commitHooks: CommitHook[] = []

/** Runs inside the settings transaction (e.g. the reconciler: a proxy rejection rolls the change back). */
export function onSettingsCommit(hook: CommitHook): void {
  _commitHooks.push(hook)
}

async function _storedValues(exec: Executor, keys?: string[]): Promise<Map<string, unknown>> {
  const q = exec.select().from(settings)
  const rows = keys ? await q.where(inArray(settings.key, keys)) : await q
  return new Map(rows.map((r) => [r.key, JSON.parse(r.value)]))
}

/** A setting's effective value; secret settings come back decrypted (use only at the point of use). */
export async function getSetting<T>(key: string, exec: Executor = getDb()): Promise<T> {
  const def = _byKey.get(key)
  if (!def) throw new Error(`unknown setting ${key}`)
  const stored = (await _storedValues(exec, [key])).get(key)
  if (stored === undefined) return def.default() as T
  return (def.secret ? (stored === '' ? '' : getSecretsBox().open(stored as string, _owner(key))) : stored) as T
}

/** Every setting as the API shows it: secrets as "__SET__" or "". */
export async function listSettingsForDisplay(): Promise<Record<string, unknown>> {
  const stored = await _storedValues(getDb())
  const out: Record<string, unknown> = {}
  for (const def of SETTINGS_CATALOGUE) {
    const v = stored.has(def.key) ? stored.get(def.key) : def.default()
    out[def.key] = def.secret ? (v ? SECRET_SET : '') : v
  }
  return out
}

/** Validates a partial update completely before anything is written. */
export function validateSettingsPatch(patch: unknown): Record<string, unknown> {
  if (!patch || typeof patch !== 'object' || Array.isArray(patch)) throw badRequest('body: must be an object of setting keys and values')
  const clean: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(patch)) {
    const def = _byKey.get(key)
    if (!def) throw badRequest(`unknown setting "${key}"; GET /api/settings lists the keys`)
    if (def.secret && value === UNCHANGED) continue
    const r = def.schema.safeParse(value)
    if (!r.success) throw badRequest(`${key}: ${describeZodError(r.error).replace(/^body: /, '')}`)
    clean[key] = r.data
  }
  return clean
}

const _STORAGE_KEYS = ['proxy.storage', 'proxy.storage.encryption_key']

/**
 * The storage settings as they would be after the patch, checked together (a rule
 * spans two keys, one of them secret): 400 before anything is written. A switch of
 * the storage is allowed while nodes exist (the migration's last step); the answer
 * is what the audit row says of it, from what to what, never a secret.
 */
async function _checkStorage(tx: Tx, clean: Record<string, unknown>): Promise<{ from: unknown; to: unknown } | null> {
  if (!_STORAGE_KEYS.some((k) => k in clean)) return null
  const before = await getSetting<ProxyStorage>('proxy.storage', tx)
  const storage = 'proxy.storage' in clean ? (clean['proxy.storage'] as ProxyStorage) : before
  const encryptionKey =
    'proxy.storage.encryption_key' in clean
      ? (clean['proxy.storage.encryption_key'] as string)
      : await getSetting<string>('proxy.storage.encryption_key', tx)
  const problem = storageSettingsProblem({ storage, encryptionKey, modules: getConfig().proxy.modules })
  if (problem) throw badRequest(problem)
  if (!('proxy.storage' in clean) || JSON.stringify(before) === JSON.stringify(storage)) return null
  return { from: describeStorageForAudit(before), to: describeStorageForAudit(storage) }
}

export async function updateSettings(patch: unknown, ctx: AuditContext): Promise<Record<string, unknown>> {
  const clean = validateSettingsPatch(patch)
  const keys = Object.keys(clean)
  if (keys.length) {
    await writeTransaction(async (tx) => {
      const storage = await _checkStorage(tx, clean)
      const now = new Date().toISOString()
      for (const key of keys) {
        const def = _byKey.get(key)!
        const value = def.secret && clean[key] !== '' ? getSecretsBox().seal(clean[key] as string, _owner(key)) : clean[key]
        await tx
          .insert(settings)
          .values({ key, value: JSON.stringify(value), updatedAt: now })
          .onConflictDoUpdate({ target: settings.key, set: { value: JSON.stringify(value), updatedAt: now } })
      }
      await writeAudit(ctx, 'settings_update', { keys, ...(storage ? { storage } : {}) }, tx)
      for (const hook of _commitHooks) await hook(tx, keys, ctx)
    })
  }
  return listSettingsForDisplay()
}

export function settingAffectsProxy(key: string): boolean {
  return _byKey.get(key)?.affectsProxy === true
}
