import { existsSync } from 'node:fs'
import { basename, join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { parse as parseYaml } from 'yaml'
import { getConfig } from '../core/config'
import { upstreamUnavailable } from '../core/errors'
import { engineConfigDir, readFileOrNull } from './engine-files'

// The security engine's own database, read-only (docs/security-engine.md, "Bouncers and
// machines"). The local API has no route listing its bouncers or machines (cscli reads the
// database directly), so the panel does the same, read-only, and never writes it: the
// engine's schema is its own (ent), and a write behind its back could break it.
//
// Where: `db_config` of the engine's config.yaml in CROWDSEC_CONFIG_DIR, with
// config.yaml.local merged over it as the engine does. Only `type: sqlite`; a database
// server (MySQL, PostgreSQL) is another service the panel has no credentials for.
// Table and column names are those of CrowdSec 1.7.8 (pkg/database/ent/schema, checked
// against a database the real engine created): `bouncers` and `machines`.

const _ENGINE = 'security engine'
// The engine holds its write lock briefly; a read waits for it rather than failing at once.
// But node:sqlite reads synchronously, on the panel's one thread: a wait for the engine's write
// lock stalls every request meanwhile (ForwardAuth included). An engine commit holds it for
// milliseconds, so a short wait is enough; past it the read answers 503 and is retried later.
const _BUSY_TIMEOUT_MS = 250

export interface EngineBouncerRow {
  name: string
  /** SHA-512 (hex) of the bouncer's key, as the engine stores it: matched, never shown. */
  apiKeyHash: string
  revoked: boolean
  ipAddress: string
  type: string
  version: string
  lastPull: string | null
  authType: string
  autoCreated: boolean
  createdAt: string | null
}

export interface EngineMachineRow {
  machineId: string
  ipAddress: string
  version: string
  validated: boolean
  lastPush: string | null
  lastHeartbeat: string | null
  authType: string
  createdAt: string | null
}

/**
 * Pure: an ent timestamp as SQLite holds it ("2026-11-25 00:20:09.297443057+00:00") as
 * RFC 3339 in UTC with milliseconds; null for none or for text that is not a time.
 */
export function engineTimestamp(value: unknown): string | null {
  if (value === null || value === undefined || value === '') return null
  const text = String(value)
    .trim()
    .replace(' ', 'T')
    .replace(/(\.\d{3})\d+/, '$1')
  const ms = Date.parse(text)
  return Number.isNaN(ms) ? null : new Date(ms).toISOString()
}

function _yamlFile(path: string): Record<string, any> {
  const text = readFileOrNull(path)
  if (text === null) return {}
  try {
    const parsed = parseYaml(text)
    return parsed && typeof parsed === 'object' ? parsed : {}
  } catch {
    throw upstreamUnavailable(_ENGINE, `${path} is not readable YAML, so the panel cannot find the engine's database`)
  }
}

/**
 * Pure: the database file from the engine's config.yaml (and its .local), or why not.
 * `dataDir`: where the panel mounts the engine's data folder (CROWDSEC_DATA_DIR), tried when
 * the engine's path does not exist here (the same folder mounted at another path).
 */
export function resolveEngineDbPath(
  config: Record<string, any>,
  local: Record<string, any>,
  exists: (path: string) => boolean,
  dataDir?: string,
): { path: string } | { error: string } {
  const db = { ...(config.db_config ?? {}), ...(local.db_config ?? {}) } as Record<string, unknown>
  const type = String(db.type ?? '')
  if (type !== 'sqlite')
    return {
      error: `its database is ${type ? `of type "${type}"` : 'not configured (no db_config.type)'}; the panel reads the bouncers and machines only from a sqlite database (db_config.type: sqlite in config.yaml)`,
    }
  const path = typeof db.db_path === 'string' ? db.db_path : ''
  if (!path) return { error: 'config.yaml names no db_config.db_path' }
  if (path.includes('${'))
    return { error: `db_config.db_path (${path}) uses an environment variable the panel cannot resolve; write the path itself` }
  if (exists(path)) return { path }
  if (dataDir) {
    const mounted = join(dataDir, basename(path))
    if (exists(mounted)) return { path: mounted }
  }
  return {
    error: `its database ${path} is not visible to the panel; mount the engine's data folder at that path (or set CROWDSEC_DATA_DIR to where it is mounted)`,
  }
}

function _enginePath(): string {
  const dir = engineConfigDir()
  const found = resolveEngineDbPath(
    _yamlFile(join(dir, 'config.yaml')),
    _yamlFile(join(dir, 'config.yaml.local')),
    existsSync,
    getConfig().crowdsecDataDir,
  )
  if ('error' in found) throw upstreamUnavailable(_ENGINE, found.error)
  return found.path
}

/** One read-only connection for `fn`, closed afterwards. */
function _read<T>(fn: (db: DatabaseSync) => T): T {
  const path = _enginePath()
  let db: DatabaseSync
  try {
    db = new DatabaseSync(path, { readOnly: true, timeout: _BUSY_TIMEOUT_MS })
  } catch (err) {
    throw upstreamUnavailable(_ENGINE, `its database ${path} cannot be opened read-only: ${(err as Error).message}`)
  }
  try {
    return fn(db)
  } catch (err) {
    throw upstreamUnavailable(
      _ENGINE,
      `its database ${path} could not be read (${(err as Error).message}); the panel knows the schema of CrowdSec 1.7`,
    )
  } finally {
    db.close()
  }
}

const _text = (v: unknown) => (v === null || v === undefined ? '' : String(v))

export function readEngineBouncers(): EngineBouncerRow[] {
  return _read((db) =>
    db
      .prepare(
        'SELECT name, api_key, revoked, ip_address, type, version, last_pull, auth_type, auto_created, created_at FROM bouncers ORDER BY name',
      )
      .all()
      .map((r) => ({
        name: _text(r.name),
        apiKeyHash: _text(r.api_key).toLowerCase(),
        revoked: Number(r.revoked) === 1,
        ipAddress: _text(r.ip_address),
        type: _text(r.type),
        version: _text(r.version),
        lastPull: engineTimestamp(r.last_pull),
        authType: _text(r.auth_type),
        autoCreated: Number(r.auto_created) === 1,
        createdAt: engineTimestamp(r.created_at),
      })),
  )
}

export function readEngineMachines(): EngineMachineRow[] {
  return _read((db) =>
    db
      .prepare(
        'SELECT machine_id, ip_address, version, is_validated, last_push, last_heartbeat, auth_type, created_at FROM machines ORDER BY machine_id',
      )
      .all()
      .map((r) => ({
        machineId: _text(r.machine_id),
        ipAddress: _text(r.ip_address),
        version: _text(r.version),
        validated: Number(r.is_validated) === 1,
        lastPush: engineTimestamp(r.last_push),
        lastHeartbeat: engineTimestamp(r.last_heartbeat),
        authType: _text(r.auth_type),
        createdAt: engineTimestamp(r.created_at),
      })),
  )
}
