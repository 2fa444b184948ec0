import { describe, expect, it } from 'vitest'
import { buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { proxyStorageSchema, type ProxyStorage } from '../../server/utils/proxy/storage/schemas'
import { describeStorageForAudit, storageSettingsProblem, type StorageSnapshot } from '../../server/utils/proxy/storage/storage-config'
import { validateSettingsPatch } from '../../server/utils/core/settings'
import { buildSnapshot } from '../support/factories'

// The certificate storage every node is given (docs/scaling.md): the file system as
// before, or the project's panel_redis module with the secrets decrypted only here.

const redis = (over: Record<string, unknown>): ProxyStorage =>
  proxyStorageSchema.parse({ module: 'redis', addresses: ['10.0.0.5:6379'], ...over })
const snap = (storage: ProxyStorage, secrets: Partial<Omit<StorageSnapshot, 'storage'>> = {}): StorageSnapshot => ({
  storage,
  redisPassword: '',
  sentinelPassword: '',
  encryptionKey: '',
  ...secrets,
})
const WITH_MODULE = { modules: ['storage' as const] }

describe('file system storage', () => {
  it('is byte for byte the configuration of before the setting', () => {
    // What the builder gave before proxy.storage existed: no `storage` member in the snapshot at all.
    const before = stableStringify(buildProxyConfig(buildSnapshot(WITH_MODULE)).config)
    const after = buildProxyConfig(buildSnapshot({ ...WITH_MODULE, storage: snap({ module: 'file_system' }) }))
    expect(stableStringify(after.config)).toBe(before)
    expect(after.config.storage).toEqual({ module: 'file_system', root: '/var/lib/caddy' })
    expect(after.warnings.filter((w) => w.includes('storage'))).toEqual([])
  })
  it('without PROXY_DATA_DIR leaves Caddy its own folder, as before', () => {
    const { config } = buildProxyConfig(buildSnapshot({ storageRoot: null, storage: snap({ module: 'file_system' }) }))
    expect(config).not.toHaveProperty('storage')
  })
})

describe('redis storage', () => {
  it('single: one address, the password, the prefix and the database', () => {
    const { config, warnings } = buildProxyConfig(
      buildSnapshot({
        ...WITH_MODULE,
        storage: snap(redis({ db: 3, key_prefix: 'fleet-a', username: 'edge' }), { redisPassword: 'pw-of-redis-1' }),
      }),
    )
    expect(warnings.filter((w) => w.includes('storage'))).toEqual([])
    expect(config.storage).toEqual({
      module: 'panel_redis',
      mode: 'single',
      addresses: ['10.0.0.5:6379'],
      db: 3,
      key_prefix: 'fleet-a',
      username: 'edge',
      password: 'pw-of-redis-1',
    })
  })
  it('sentinel: the Sentinels, the primary they watch and their own password', () => {
    const storage = redis({ mode: 'sentinel', addresses: ['10.0.0.7:26379', '10.0.0.8:26379'], sentinel_master: 'mymaster' })
    const { config } = buildProxyConfig(
      buildSnapshot({ ...WITH_MODULE, storage: snap(storage, { redisPassword: 'pw-data', sentinelPassword: 'pw-sentinel' }) }),
    )
    expect(config.storage).toEqual({
      module: 'panel_redis',
      mode: 'sentinel',
      addresses: ['10.0.0.7:26379', '10.0.0.8:26379'],
      sentinel_master: 'mymaster',
      db: 0,
      key_prefix: 'caddy',
      password: 'pw-data',
      sentinel_password: 'pw-sentinel',
    })
  })
  it('cluster: some of the cluster nodes, database 0, no Sentinel fields', () => {
    const storage = redis({ mode: 'cluster', addresses: ['10.0.1.1:7000', '10.0.1.2:7000', '10.0.1.3:7000'] })
    const { config } = buildProxyConfig(buildSnapshot({ ...WITH_MODULE, storage: snap(storage, { sentinelPassword: 'unused-pw' }) }))
    expect(config.storage).toEqual({
      module: 'panel_redis',
      mode: 'cluster',
      addresses: ['10.0.1.1:7000', '10.0.1.2:7000', '10.0.1.3:7000'],
      db: 0,
      key_prefix: 'caddy',
    })
  })
  it('tls with a CA and the name checked', () => {
    const ca = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'
    const storage = redis({ tls: true, tls_server_name: 'redis.internal', tls_ca_pem: ca })
    const { config } = buildProxyConfig(buildSnapshot({ ...WITH_MODULE, storage: snap(storage) }))
    expect((config.storage as Record<string, unknown>).tls).toEqual({ enabled: true, server_name: 'redis.internal', ca_pem: ca })
    const plain = buildProxyConfig(buildSnapshot({ ...WITH_MODULE, storage: snap(redis({ tls: true })) })).config.storage
    expect((plain as Record<string, unknown>).tls).toEqual({ enabled: true })
  })
  it('encryption: the key goes with "encrypt" only', () => {
    const sealed = buildProxyConfig(
      buildSnapshot({ ...WITH_MODULE, storage: snap(redis({ encrypt: true }), { encryptionKey: 'k'.repeat(32) }) }),
    ).config.storage as Record<string, unknown>
    expect(sealed.encryption_key).toBe('k'.repeat(32))
    const clear = buildProxyConfig(buildSnapshot({ ...WITH_MODULE, storage: snap(redis({}), { encryptionKey: 'k'.repeat(32) }) })).config
      .storage as Record<string, unknown>
    expect(clear).not.toHaveProperty('encryption_key')
    // Never in clear what was asked to be sealed.
    expect(() => buildProxyConfig(buildSnapshot({ ...WITH_MODULE, storage: snap(redis({ encrypt: true })) }))).toThrow(/encryption_key/)
  })
  it('a build without the storage module keeps the folder and says so', () => {
    const { config, warnings } = buildProxyConfig(buildSnapshot({ storage: snap(redis({})) }))
    expect(config.storage).toEqual({ module: 'file_system', root: '/var/lib/caddy' })
    expect(warnings.join('\n')).toMatch(/PROXY_MODULES has no "storage"/)
  })
})

describe('the storage settings', () => {
  it('checks the shape: addresses, the Sentinel primary, the cluster database', () => {
    expect(() => validateSettingsPatch({ 'proxy.storage': { module: 'redis', addresses: [] } })).toThrow(
      /^proxy\.storage: .*at least one Redis address/,
    )
    expect(() => validateSettingsPatch({ 'proxy.storage': { module: 'redis', addresses: ['redis'] } })).toThrow(/host:port/)
    expect(() => validateSettingsPatch({ 'proxy.storage': { module: 'redis', mode: 'sentinel', addresses: ['a:26379'] } })).toThrow(
      /sentinel monitor/,
    )
    expect(() => validateSettingsPatch({ 'proxy.storage': { module: 'redis', mode: 'cluster', addresses: ['a:7000'], db: 2 } })).toThrow(
      /must be 0 in cluster mode/,
    )
    expect(() => validateSettingsPatch({ 'proxy.storage': { module: 's3' } })).toThrow(/^proxy\.storage: /)
    expect(validateSettingsPatch({ 'proxy.storage': { module: 'file_system' } })).toEqual({ 'proxy.storage': { module: 'file_system' } })
  })
  it('an encryption key is at least 16 characters (or empty)', () => {
    expect(() => validateSettingsPatch({ 'proxy.storage.encryption_key': 'short-key' })).toThrow(
      /^proxy\.storage\.encryption_key: must be at least 16 characters/,
    )
    expect(validateSettingsPatch({ 'proxy.storage.encryption_key': '' })).toEqual({ 'proxy.storage.encryption_key': '' })
    expect(validateSettingsPatch({ 'proxy.storage.encryption_key': '__UNCHANGED__' })).toEqual({})
  })
  it('"encrypt" needs a key, and redis needs the build\'s storage module', () => {
    const r = redis({ encrypt: true })
    expect(storageSettingsProblem({ storage: r, encryptionKey: '', modules: ['storage'] })).toMatch(
      /set proxy\.storage\.encryption_key \(at least 16 characters\)/,
    )
    expect(storageSettingsProblem({ storage: r, encryptionKey: 'x'.repeat(16), modules: ['storage'] })).toBeNull()
    expect(storageSettingsProblem({ storage: redis({}), encryptionKey: '', modules: ['waf'] })).toMatch(/add "storage" to PROXY_MODULES/)
    expect(storageSettingsProblem({ storage: { module: 'file_system' }, encryptionKey: '', modules: [] })).toBeNull()
  })
  it('an audit row names a storage without its CA text', () => {
    expect(describeStorageForAudit(redis({ tls: true, tls_ca_pem: 'PEM' }))).toMatchObject({ module: 'redis', tls_ca_pem_set: true })
    expect(describeStorageForAudit(redis({}))).not.toHaveProperty('tls_ca_pem')
  })
})
