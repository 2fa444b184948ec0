import { blob, integer, real, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import type { GeoPolicy } from '../server/utils/access/schemas'

// Query types for the tables created by db/migrations. The SQL files are the
// source of truth for the schema; keep this file in step with them.

export const settings = sqliteTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: text('updated_at').notNull(),
})

export const runtimeState = sqliteTable('runtime_state', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: text('updated_at').notNull(),
})

export const users = sqliteTable('users', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  email: text('email').notNull(),
  name: text('name').notNull().default(''),
  role: text('role', { enum: ['admin', 'viewer'] }).notNull(),
  passwordHash: text('password_hash'),
  provider: text('provider').notNull().default('local'),
  externalId: text('external_id'),
  totpSecret: text('totp_secret'),
  totpEnabled: integer('totp_enabled', { mode: 'boolean' }).notNull().default(false),
  /** The last accepted TOTP step (migration 0010): that step or an older one is a replay. */
  totpLastStep: integer('totp_last_step').notNull().default(0),
  /** Migration 0048: panel-local groups, and the groups the OIDC claim gave at the last login (docs/access-control.md). */
  groups: text('groups', { mode: 'json' }).notNull().$type<string[]>().default([]),
  oidcGroups: text('oidc_groups', { mode: 'json' }).notNull().$type<string[]>().default([]),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})

export const sessions = sqliteTable('sessions', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  tokenHash: text('token_hash').notNull(),
  userId: integer('user_id').notNull(),
  createdAtMs: integer('created_at_ms').notNull(),
  expiresAtMs: integer('expires_at_ms').notNull(),
  lastSeenAtMs: integer('last_seen_at_ms').notNull(),
  remoteIp: text('remote_ip'),
  userAgent: text('user_agent'),
})

/** Migration 0031: strict session mode's one-time codes (server/utils/auth/forward-credentials.ts); hashes only. */
export const forwardAuthCodes = sqliteTable('forward_auth_codes', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  codeHash: text('code_hash').notNull(),
  sessionId: integer('session_id').notNull(),
  host: text('host').notNull(),
  expiresAtMs: integer('expires_at_ms').notNull(),
})

/** Migration 0031: ForwardAuth's own credential per (session, protected host); hashes only. */
export const forwardAuthCredentials = sqliteTable('forward_auth_credentials', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  tokenHash: text('token_hash').notNull(),
  sessionId: integer('session_id').notNull(),
  host: text('host').notNull(),
  createdAtMs: integer('created_at_ms').notNull(),
})

export const loginAttempts = sqliteTable('login_attempts', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  tsMs: integer('ts_ms').notNull(),
  email: text('email'),
  remoteIp: text('remote_ip'),
  success: integer('success', { mode: 'boolean' }).notNull(),
})

/** Migration 0018: API tokens (server/utils/auth/api-tokens.ts); only the secret's SHA-256 is stored. */
export const apiTokens = sqliteTable('api_tokens', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  userId: integer('user_id').notNull(),
  name: text('name').notNull(),
  scope: text('scope', { enum: ['read', 'admin'] }).notNull(),
  tokenHash: text('token_hash').notNull(),
  prefix: text('prefix').notNull(),
  createdAtMs: integer('created_at_ms').notNull(),
  expiresAtMs: integer('expires_at_ms'),
  lastUsedAtMs: integer('last_used_at_ms'),
  lastUsedIp: text('last_used_ip'),
  revokedAtMs: integer('revoked_at_ms'),
  revokedBy: text('revoked_by'),
})

/** Migration 0018: failed bearer tokens, throttled per source like passwords. */
export const apiTokenAttempts = sqliteTable('api_token_attempts', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  tsMs: integer('ts_ms').notNull(),
  remoteIp: text('remote_ip'),
  success: integer('success', { mode: 'boolean' }).notNull(),
})

export const totpAttempts = sqliteTable('totp_attempts', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  tsMs: integer('ts_ms').notNull(),
  userId: integer('user_id'),
  remoteIp: text('remote_ip'),
  success: integer('success', { mode: 'boolean' }).notNull(),
})

export const totpRecoveryCodes = sqliteTable('totp_recovery_codes', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  userId: integer('user_id').notNull(),
  codeHash: text('code_hash').notNull(),
  createdAtMs: integer('created_at_ms').notNull(),
  usedAtMs: integer('used_at_ms'),
})

/** Migration 0049: passkeys (WebAuthn credentials), server/utils/auth/passkeys.ts. */
export const passkeys = sqliteTable('passkeys', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  userId: integer('user_id').notNull(),
  credentialId: text('credential_id').notNull(),
  publicKey: text('public_key').notNull(),
  counter: integer('counter').notNull(),
  transports: text('transports', { mode: 'json' }).$type<string[]>().notNull(),
  name: text('name').notNull(),
  createdAtMs: integer('created_at_ms').notNull(),
  lastUsedAtMs: integer('last_used_at_ms'),
})

export const logs = sqliteTable('logs', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  tsMs: integer('ts_ms').notNull(),
  source: text('source', { enum: ['caddy_access', 'caddy_error', 'audit', 'waf_audit', 'layer4'] }).notNull(),
  hostId: integer('host_id'),
  hostDomain: text('host_domain'),
  ruleId: integer('rule_id'),
  status: integer('status'),
  method: text('method'),
  path: text('path'),
  remoteIp: text('remote_ip'),
  userAgent: text('user_agent'),
  level: text('level'),
  message: text('message'),
  raw: text('raw'),
  durationMs: real('duration_ms'),
  wafRuleId: integer('waf_rule_id'),
  wafSeverity: text('waf_severity'),
  wafAnomalyScore: integer('waf_anomaly_score'),
  /** JSON: every rule a waf_audit row matched ([{id, severity, score, msg}], parse.ts WafRuleHit). */
  wafRules: text('waf_rules'),
  country: text('country'),
  actor: text('actor'),
  nodeId: integer('node_id'),
  nodeName: text('node_name'),
  // A WAF or error row folded into the access row of the same request (migration 0035, server/utils/logs/fold.ts).
  requestLogId: integer('request_log_id'),
  // Caddy's id of the request (its access line's `uuid`), shown on the refusal pages (migration 0041).
  requestId: text('request_id'),
  // A stream's connection (source layer4, migration 0044): the stream, its name when ingested (as
  // host_domain beside host_id), the upstream when known, the bytes client->upstream and back.
  streamId: integer('stream_id'),
  streamName: text('stream_name'),
  upstream: text('upstream'),
  bytesIn: integer('bytes_in'),
  bytesOut: integer('bytes_out'),
  // Migration 0048: the client's AS number (from asn.mmdb at ingestion, like country), for the replay of geo rules.
  asn: integer('asn'),
})

export const targetGroups = sqliteTable('target_groups', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull(),
  targets: text('targets', { mode: 'json' }).notNull().$type<{ address: string; weight: number }[]>(),
  scheme: text('scheme', { enum: ['http', 'https'] }).notNull(),
  lbPolicy: text('lb_policy', { enum: ['round_robin', 'least_conn', 'random', 'first', 'ip_hash', 'weighted_round_robin'] }).notNull(),
  healthCheck: text('health_check', { mode: 'json' }).$type<{ path: string; interval_seconds: number; expect_status: number } | null>(),
  tlsSkipVerify: integer('tls_skip_verify', { mode: 'boolean' }).notNull().default(false),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})

export const hosts = sqliteTable('hosts', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  domain: text('domain').notNull(),
  aliases: text('aliases', { mode: 'json' }).notNull().$type<string[]>(),
  // Null for the kinds that need no upstream (0038); a proxy host always has one (hosts/kinds.ts).
  targetGroupId: integer('target_group_id'),
  enabled: integer('enabled', { mode: 'boolean' }).notNull().default(true),
  tlsMode: text('tls_mode', { enum: ['auto', 'manual', 'none'] }).notNull(),
  tlsChallenge: text('tls_challenge', { enum: ['dns', 'http', 'tls-alpn'] }).notNull(),
  tlsEmail: text('tls_email'),
  tlsDnsProvider: text('tls_dns_provider'),
  tlsAcmeCaUrl: text('tls_acme_ca_url'),
  lanOnly: integer('lan_only', { mode: 'boolean' }).notNull().default(false),
  trueDetectMode: integer('true_detect_mode', { mode: 'boolean' }).notNull().default(false),
  engineDownRefuse: integer('engine_down_refuse', { mode: 'boolean' }).notNull().default(false),
  authRequired: integer('auth_required', { mode: 'boolean' }).notNull().default(false),
  wafEnabled: integer('waf_enabled', { mode: 'boolean' }).notNull().default(false),
  wafMode: text('waf_mode', { enum: ['detection', 'blocking'] })
    .notNull()
    .default('detection'),
  rateLimitEnabled: integer('rate_limit_enabled', { mode: 'boolean' }).notNull().default(false),
  rateLimitRps: integer('rate_limit_rps').notNull().default(50),
  rateLimitBurst: integer('rate_limit_burst').notNull().default(100),
  bouncerEnabled: integer('bouncer_enabled', { mode: 'boolean' }).notNull().default(true),
  wafProfile: text('waf_profile', { enum: ['fast', 'full'] })
    .notNull()
    .default('full'),
  wafFamilies: text('waf_families', { mode: 'json' }).notNull().$type<string[]>(),
  wafBodyLimitKb: integer('waf_body_limit_kb'),
  wafBodyMaxArgs: integer('waf_body_max_args'),
  wafJsonMaxDepth: integer('waf_json_max_depth'),
  wafBodyLimitAction: text('waf_body_limit_action', { enum: ['partial', 'pass', 'refuse'] }),
  wafAllowedContentTypes: text('waf_allowed_content_types', { mode: 'json' }).$type<string[]>(),
  // Migration 0040: the escape hatch (docs/hosts.md), raw Caddy handlers and where they run.
  customHandlers: text('custom_handlers', { mode: 'json' }).notNull().$type<Record<string, unknown>[]>(),
  customHandlersAt: text('custom_handlers_at', { enum: ['after_security', 'before_proxy'] })
    .notNull()
    .default('before_proxy'),
  compression: text('compression', { enum: ['inherit', 'on', 'off'] })
    .notNull()
    .default('inherit'),
  headerRules: text('header_rules', { mode: 'json' })
    .notNull()
    .$type<{ direction: 'request' | 'response'; action: 'set' | 'add' | 'remove'; name: string; value: string | null }[]>(),
  upstreamHost: text('upstream_host'),
  hsts: text('hsts', { mode: 'json' }).$type<{ max_age: number; include_subdomains: boolean; preload: boolean }>(),
  securityHeaders: integer('security_headers', { mode: 'boolean' }).notNull().default(false),
  csp: text('csp', { mode: 'json' }).$type<{ mode: 'enforce' | 'report-only'; policy: string }>(),
  // Host kinds (0038, docs/hosts.md): what answers at the end of the chain.
  kind: text('kind', { enum: ['proxy', 'redirect', 'static', 'maintenance'] })
    .notNull()
    .default('proxy'),
  redirectTo: text('redirect_to'),
  redirectStatus: integer('redirect_status').notNull().default(302).$type<301 | 302 | 303 | 307 | 308>(),
  redirectKeepPath: integer('redirect_keep_path', { mode: 'boolean' }).notNull().default(true),
  staticStatus: integer('static_status').notNull().default(200),
  staticContentType: text('static_content_type').notNull().default('text/plain; charset=utf-8'),
  staticBody: text('static_body').notNull().default(''),
  maintenanceRetryAfter: integer('maintenance_retry_after').notNull().default(300),
  maintenanceContentType: text('maintenance_content_type').notNull().default('text/plain; charset=utf-8'),
  maintenanceBody: text('maintenance_body').notNull().default('This site is down for maintenance. Please try again later.'),
  maintenanceBypass: text('maintenance_bypass', { mode: 'json' }).notNull().$type<string[]>().default([]),
  // Migration 0041: pages of our own (docs/hosts.md, "Pages"), following the setting proxy.error_pages or not.
  errorPages: text('error_pages', { enum: ['inherit', 'on', 'off'] })
    .notNull()
    .default('inherit'),
  errorPageMessage: text('error_page_message'),
  // Migration 0048 (docs/access-control.md): the host's geo and network policy (null: none), and who may enter
  // when it asks for the panel's login (both lists empty: any signed-in user).
  geoPolicy: text('geo_policy', { mode: 'json' }).$type<GeoPolicy>(),
  authAllowedUsers: text('auth_allowed_users', { mode: 'json' }).notNull().$type<number[]>().default([]),
  authAllowedGroups: text('auth_allowed_groups', { mode: 'json' }).notNull().$type<string[]>().default([]),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})

export const wafExclusions = sqliteTable('waf_exclusions', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  hostId: integer('host_id').notNull(),
  ruleId: integer('rule_id').notNull(),
  path: text('path'),
  argument: text('argument'),
  note: text('note'),
  sourceLogId: integer('source_log_id'),
  createdAt: text('created_at').notNull(),
})

export const hostNames = sqliteTable('host_names', {
  name: text('name').primaryKey(),
  hostId: integer('host_id').notNull(),
})

export const rules = sqliteTable('rules', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  hostId: integer('host_id').notNull(),
  priority: integer('priority').notNull().default(100),
  path: text('path').notNull(),
  methods: text('methods', { mode: 'json' }).notNull().$type<('GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS')[]>(),
  action: text('action', { enum: ['proxy', 'redirect', 'respond'] }).notNull(),
  targetGroupId: integer('target_group_id'),
  redirectUrl: text('redirect_url'),
  redirectStatus: integer('redirect_status').$type<301 | 302 | 303 | 307 | 308>(),
  respondStatus: integer('respond_status'),
  respondBody: text('respond_body'),
  /** Migration 0042: the rule's header rules, applied after the host's (docs/hosts.md, "Header rules"). */
  headerRules: text('header_rules', { mode: 'json' })
    .notNull()
    .$type<{ direction: 'request' | 'response'; action: 'set' | 'add' | 'remove'; name: string; value: string | null }[]>(),
  /** Migration 0048: the rule's geo and network policy, applied after the host's (docs/access-control.md). */
  geoPolicy: text('geo_policy', { mode: 'json' }).$type<GeoPolicy>(),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})

export const dnsProviders = sqliteTable('dns_providers', {
  // CHECK: one of the catalogue's names (server/utils/hosts/dns-catalogue.ts; widened by 0016, 0045 and 0047).
  name: text('name').primaryKey(),
  enabled: integer('enabled', { mode: 'boolean' }).notNull().default(true),
  credentials: text('credentials'),
  updatedAt: text('updated_at').notNull(),
})

export const manualCerts = sqliteTable('manual_certs', {
  hostId: integer('host_id').primaryKey(),
  subject: text('subject').notNull(),
  issuer: text('issuer').notNull(),
  sans: text('sans', { mode: 'json' }).notNull().$type<string[]>(),
  notBefore: text('not_before').notNull(),
  notAfter: text('not_after').notNull(),
  fingerprintSha256: text('fingerprint_sha256').notNull(),
  certPem: text('cert_pem').notNull(),
  chainPem: text('chain_pem'),
  keySealed: text('key_sealed').notNull(),
  uploadedAt: text('uploaded_at').notNull(),
  uploadedBy: text('uploaded_by').notNull(),
})

export const whitelistEntries = sqliteTable('whitelist_entries', {
  value: text('value').primaryKey(),
  reason: text('reason').notNull().default(''),
  createdAt: text('created_at').notNull(),
  createdBy: text('created_by').notNull(),
})

/** Migration 0036: the reason given for a ban made in the panel, by canonical value (server/utils/security/bans.ts). */
export const panelBanReasons = sqliteTable('panel_ban_reasons', {
  value: text('value').primaryKey(),
  reason: text('reason').notNull(),
  createdBy: text('created_by').notNull(),
  createdAt: text('created_at').notNull(),
})

export const scenarioOverrides = sqliteTable('scenario_overrides', {
  canonicalName: text('canonical_name').primaryKey(),
  linkTarget: text('link_target').notNull(),
  updatedAt: text('updated_at').notNull(),
  /** false: re-enabled in the panel (its link is restored if it goes missing). */
  disabled: integer('disabled', { mode: 'boolean' }).notNull().default(true),
})

export const countryJobs = sqliteTable('country_jobs', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  countryCode: text('country_code').notNull(),
  state: text('state', { enum: ['pending', 'running', 'completed', 'failed'] })
    .notNull()
    .default('pending'),
  chunksTotal: integer('chunks_total').notNull().default(0),
  chunksDone: integer('chunks_done').notNull().default(0),
  chunksFailed: integer('chunks_failed').notNull().default(0),
  cidrCommitted: integer('cidr_committed').notNull().default(0),
  requestedCount: integer('requested_count').notNull().default(0),
  duration: text('duration').notNull().default(''),
  reason: text('reason').notNull().default(''),
  errorMessage: text('error_message').notNull().default(''),
  createdAt: text('created_at').notNull(),
  startedAt: text('started_at'),
  completedAt: text('completed_at'),
  createdBy: text('created_by').notNull().default(''),
  instanceId: text('instance_id').notNull().default(''),
})

export const countryBans = sqliteTable('country_bans', {
  countryCode: text('country_code').primaryKey(),
  cidrs: text('cidrs', { mode: 'json' }).notNull().$type<string[]>(),
  cidrCount: integer('cidr_count').notNull(),
  mmdbVersion: text('mmdb_version').notNull(),
  state: text('state', { enum: ['active', 'drifted'] })
    .notNull()
    .default('active'),
  duration: text('duration').notNull(),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
  checkedAt: text('checked_at'),
})

export const leases = sqliteTable('leases', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  expiresAtMs: integer('expires_at_ms').notNull(),
})

export const logOffsets = sqliteTable('log_offsets', {
  path: text('path').primaryKey(),
  inode: integer('inode').notNull(),
  offsetBytes: integer('offset_bytes').notNull(),
  updatedAt: text('updated_at').notNull(),
})

export const notificationChannels = sqliteTable('notification_channels', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull(),
  type: text('type', { enum: ['webhook', 'email', 'chat', 'push'] }).notNull(),
  enabled: integer('enabled', { mode: 'boolean' }).notNull().default(true),
  config: text('config', { mode: 'json' }).notNull().$type<Record<string, unknown>>(),
  secrets: text('secrets'),
  lastStatus: text('last_status'),
  lastError: text('last_error'),
  lastSentAt: text('last_sent_at'),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})

export const notificationRules = sqliteTable('notification_rules', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull(),
  events: text('events', { mode: 'json' }).notNull().$type<string[]>(),
  channelIds: text('channel_ids', { mode: 'json' }).notNull().$type<number[]>(),
  throttleSeconds: integer('throttle_seconds').notNull().default(0),
  enabled: integer('enabled', { mode: 'boolean' }).notNull().default(true),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})

// Hourly roll-ups of `logs` (migration 0009): see server/utils/logs/rollup.ts.
export const logsRollupState = sqliteTable('logs_rollup_state', {
  id: integer('id').primaryKey(),
  lastId: integer('last_id').notNull(),
  /** Ids at or below it are in the free-text index (migration 0029). */
  textLastId: integer('text_last_id').notNull().default(0),
})

export const logsHourly = sqliteTable('logs_hourly', {
  hourMs: integer('hour_ms').notNull(),
  source: text('source').notNull(),
  hostId: integer('host_id').notNull(),
  hostDomain: text('host_domain').notNull(),
  status: integer('status').notNull(),
  method: text('method').notNull(),
  level: text('level').notNull(),
  n: integer('n').notNull(),
  durN: integer('dur_n').notNull(),
  durSumUs: integer('dur_sum_us').notNull(),
})

export const logsHourlyDurations = sqliteTable('logs_hourly_durations', {
  hourMs: integer('hour_ms').notNull(),
  source: text('source').notNull(),
  hostId: integer('host_id').notNull(),
  hostDomain: text('host_domain').notNull(),
  bucketUs: integer('bucket_us').notNull(),
  n: integer('n').notNull(),
})

export const logsHourlyHostPaths = sqliteTable('logs_hourly_host_paths', {
  hourMs: integer('hour_ms').notNull(),
  source: text('source').notNull(),
  hostId: integer('host_id').notNull(),
  hostDomain: text('host_domain').notNull(),
  path: text('path').notNull(),
  n: integer('n').notNull(),
})

export const logsHourlyPaths = sqliteTable('logs_hourly_paths', {
  hourMs: integer('hour_ms').notNull(),
  source: text('source').notNull(),
  path: text('path').notNull(),
  n: integer('n').notNull(),
})

export const pushSubscriptions = sqliteTable('push_subscriptions', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  endpoint: text('endpoint').notNull(),
  keys: text('keys').notNull(),
  userId: integer('user_id'),
  userAgent: text('user_agent'),
  lastStatus: text('last_status'),
  lastError: text('last_error'),
  lastSentAt: text('last_sent_at'),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})

export const logsHourlyBlocked = sqliteTable('logs_hourly_blocked', {
  hourMs: integer('hour_ms').notNull(),
  source: text('source').notNull(),
  hostId: integer('host_id').notNull(),
  status: integer('status').notNull(),
  remoteIp: text('remote_ip').notNull(),
  country: text('country').notNull(),
  n: integer('n').notNull(),
})

/** Migration 0020: revisions of the pushed proxy configuration (server/utils/proxy/revisions.ts). */
export const configRevisions = sqliteTable('config_revisions', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  createdAt: text('created_at').notNull(),
  author: text('author').notNull(),
  apiTokenId: integer('api_token_id'),
  reason: text('reason').notNull(),
  /** JSON array of ObjectChange without field values (server/utils/proxy/desired-state.ts). */
  summary: text('summary', { mode: 'json' }).notNull().$type<unknown[]>(),
  /** gzip of the desired state's JSON (server/utils/proxy/revisions.ts). */
  desiredState: blob('desired_state', { mode: 'buffer' }).notNull(),
  configHash: text('config_hash').notNull(),
  /** gzip of the pushed configuration's JSON, secrets masked (server/utils/core/redact.ts). */
  config: blob('config', { mode: 'buffer' }).notNull(),
  /** Set when a revert to that revision produced this one. */
  revertedTo: integer('reverted_to'),
})

/** Migration 0019: basic-auth users (bcrypt hashes) and IP rules, attached to hosts. */
export interface AccessListIpRule {
  action: 'allow' | 'deny'
  source: string
}
export interface AccessListUser {
  username: string
  hash: string
}

export const accessLists = sqliteTable('access_lists', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull(),
  realm: text('realm').notNull().default('restricted'),
  defaultAction: text('default_action', { enum: ['allow', 'deny'] })
    .notNull()
    .default('allow'),
  ipRules: text('ip_rules', { mode: 'json' }).notNull().$type<AccessListIpRule[]>(),
  users: text('users', { mode: 'json' }).notNull().$type<AccessListUser[]>(),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})

export const hostAccessLists = sqliteTable('host_access_lists', {
  hostId: integer('host_id').primaryKey(),
  accessListId: integer('access_list_id').notNull(),
})

// Status, method and level roll-ups for p95 and top paths (migration 0022); the path
// trigram index logs_path_fts (FTS5, same migration) is reached through SQL only.
export const logsHourlyStatusDurations = sqliteTable('logs_hourly_status_durations', {
  hourMs: integer('hour_ms').notNull(),
  source: text('source').notNull(),
  hostId: integer('host_id').notNull(),
  hostDomain: text('host_domain').notNull(),
  status: integer('status').notNull(),
  method: text('method').notNull(),
  level: text('level').notNull(),
  bucketUs: integer('bucket_us').notNull(),
  n: integer('n').notNull(),
})

export const logsHourlyStatusPaths = sqliteTable('logs_hourly_status_paths', {
  hourMs: integer('hour_ms').notNull(),
  source: text('source').notNull(),
  hostId: integer('host_id').notNull(),
  hostDomain: text('host_domain').notNull(),
  status: integer('status').notNull(),
  method: text('method').notNull(),
  level: text('level').notNull(),
  path: text('path').notNull(),
  n: integer('n').notNull(),
})

/** Migration 0023: the proxy nodes the configuration is rolled out to (row 1: PROXY_ADMIN_URL). */
export const proxyNodes = sqliteTable('proxy_nodes', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull(),
  adminUrl: text('admin_url'),
  labels: text('labels', { mode: 'json' }).notNull().$type<string[]>(),
  enabled: integer('enabled', { mode: 'boolean' }).notNull(),
  tlsClientCert: text('tls_client_cert'),
  tlsServerCa: text('tls_server_ca'),
  tlsClientKey: text('tls_client_key'),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
  /** Migration 0025: the node's own bouncer key, sealed; null = LAPI_BOUNCER_KEY. */
  bouncerKey: text('bouncer_key'),
})

// Streams (migration 0043, docs/streams.md): TCP/UDP forwarding through the layer-4 app.
export const streams = sqliteTable('streams', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull(),
  enabled: integer('enabled', { mode: 'boolean' }).notNull().default(true),
  protocol: text('protocol', { enum: ['tcp', 'udp'] }).notNull(),
  listenPort: integer('listen_port').notNull(),
  /** Inclusive end of a port range; null: one port. */
  listenPortEnd: integer('listen_port_end'),
  rangeMapping: text('range_mapping', { enum: ['one_to_one', 'all_to_one'] })
    .notNull()
    .default('one_to_one'),
  targetGroupId: integer('target_group_id').notNull(),
  tlsSni: text('tls_sni', { mode: 'json' }).notNull().$type<string[]>(),
  proxyProtocol: text('proxy_protocol', { enum: ['off', 'v1', 'v2'] })
    .notNull()
    .default('off'),
  acceptProxyProtocol: integer('accept_proxy_protocol', { mode: 'boolean' }).notNull().default(false),
  lanOnly: integer('lan_only', { mode: 'boolean' }).notNull().default(false),
  accessListId: integer('access_list_id'),
  bouncerEnabled: integer('bouncer_enabled', { mode: 'boolean' }).notNull().default(true),
  engineDownRefuse: integer('engine_down_refuse', { mode: 'boolean' }).notNull().default(false),
  udpProbeHex: text('udp_probe_hex'),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
})
