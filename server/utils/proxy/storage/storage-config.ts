import type { ProxyModuleName } from '../../core/config'
import type { ProxyStorage } from './schemas'

// The certificate storage every node is given (docs/scaling.md, "Certificate storage"):
// the settings' cross-field rules, the builder's `storage` member, and the words an
// audit row uses for a switch. Pure: the callers read the settings.

/** The shortest encryption key accepted: the module derives its AES-256 key from it, a short one is guessable. */
export const ENCRYPTION_KEY_MIN_LENGTH = 16

/** The storage with its secrets, as the builder needs them (decrypted only in the build's snapshot). */
export interface StorageSnapshot {
  storage: ProxyStorage
  redisPassword: string
  sentinelPassword: string
  encryptionKey: string
}

/**
 * Why the storage settings as they would be after a PUT cannot be used, or null. The
 * message names the setting to fix and how; it never quotes a secret.
 */
export function storageSettingsProblem(o: {
  storage: ProxyStorage
  encryptionKey: string
  modules: readonly ProxyModuleName[]
}): string | null {
  if (o.storage.module !== 'redis') return null
  if (!o.modules.includes('storage'))
    return 'proxy.storage: module "redis" needs the proxy build\'s storage module: add "storage" to PROXY_MODULES (the production proxy build has it) and restart the panel, or keep {"module": "file_system"}'
  if (o.storage.encrypt && o.encryptionKey.length < ENCRYPTION_KEY_MIN_LENGTH)
    return `proxy.storage: "encrypt": true needs an encryption key: set proxy.storage.encryption_key (at least ${ENCRYPTION_KEY_MIN_LENGTH} characters) in the same change, or set "encrypt" to false`
  return null
}

/** How an audit row names a storage: every field but the CA's PEM (long; said as set or not). Never a secret. */
export function describeStorageForAudit(storage: ProxyStorage): Record<string, unknown> {
  if (storage.module !== 'redis') return { module: storage.module }
  const { tls_ca_pem, ...rest } = storage
  return { ...rest, tls_ca_pem_set: tls_ca_pem !== '' }
}

/**
 * The configuration's top-level `storage`: panel_redis per the contract of the
 * proxy's storageext module, or the file system at `storageRoot` as before (null:
 * Caddy's own default folder). A redis storage the build cannot run is refused
 * at PUT; if PROXY_MODULES lost `storage` since, the nodes keep the file system
 * and the operator is told.
 */
export function buildStorage(
  s: StorageSnapshot | null | undefined,
  storageRoot: string | null,
  modules: readonly ProxyModuleName[],
  warnings: string[],
): Record<string, unknown> | null {
  const fileSystem = storageRoot ? { module: 'file_system', root: storageRoot } : null
  if (s?.storage.module !== 'redis') return fileSystem
  if (!modules.includes('storage')) {
    warnings.push(
      'proxy.storage is redis but PROXY_MODULES has no "storage": the nodes keep their certificates in the file system until the panel runs with it',
    )
    return fileSystem
  }
  const r = s.storage
  // Storing in clear what the operator asked to be sealed would be silent: refuse the build instead.
  if (r.encrypt && !s.encryptionKey) throw new Error('proxy.storage asks for encryption but proxy.storage.encryption_key is not set')
  const out: Record<string, unknown> = {
    module: 'panel_redis',
    mode: r.mode,
    addresses: [...r.addresses],
    db: r.db,
    key_prefix: r.key_prefix,
  }
  if (r.mode === 'sentinel') out.sentinel_master = r.sentinel_master
  if (r.username) out.username = r.username
  if (s.redisPassword) out.password = s.redisPassword
  if (r.mode === 'sentinel' && s.sentinelPassword) out.sentinel_password = s.sentinelPassword
  if (r.tls)
    out.tls = {
      enabled: true,
      ...(r.tls_server_name ? { server_name: r.tls_server_name } : {}),
      ...(r.tls_ca_pem ? { ca_pem: r.tls_ca_pem } : {}),
    }
  if (r.encrypt) out.encryption_key = s.encryptionKey
  return out
}
