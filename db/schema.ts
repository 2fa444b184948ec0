import { integer, real, sqliteTable, text } from 'drizzle-orm/sqlite-core'

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

export const loginAttempts = sqliteTable('login_attempts', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  tsMs: integer('ts_ms').notNull(),
  email: text('email'),
  remoteIp: text('remote_ip'),
  success: integer('success', { mode: 'boolean' }).notNull(),
})

export const logs = sqliteTable('logs', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  tsMs: integer('ts_ms').notNull(),
  source: text('source', { enum: ['caddy_access', 'caddy_error', 'audit', 'waf_audit'] }).notNull(),
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
  country: text('country'),
  actor: text('actor'),
})
