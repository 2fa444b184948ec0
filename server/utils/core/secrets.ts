import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

// Secrets at rest: AES-256-GCM under a key derived with HKDF-SHA256 from the
// master key. The owning row is bound in as associated data, so a ciphertext
// copied onto another row (or field) fails to open.

const _VERSION = 'v1'
const _HKDF_SALT = Buffer.from('edge-panel/secrets-box')
const _HKDF_INFO = Buffer.from('aes-256-gcm v1')

export class SecretOpenError extends Error {
  constructor() {
    super('a stored secret cannot be decrypted: the master key differs from the one it was sealed with, or the data was altered')
  }
}

export interface SecretsBox {
  /** `owner` names the row and field the secret belongs to, e.g. `settings/oidc.client_secret`. */
  seal(plaintext: string, owner: string): string
  open(sealed: string, owner: string): string
}

export function createSecretsBox(masterKey: string): SecretsBox {
  const key = Buffer.from(hkdfSync('sha256', Buffer.from(masterKey, 'utf8'), _HKDF_SALT, _HKDF_INFO, 32))
  return {
    seal(plaintext, owner) {
      const iv = randomBytes(12)
      const cipher = createCipheriv('aes-256-gcm', key, iv)
      cipher.setAAD(Buffer.from(owner, 'utf8'))
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
      return `${_VERSION}.${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')}`
    },
    open(sealed, owner) {
      const [version, payload] = sealed.split('.', 2)
      if (version !== _VERSION || !payload) throw new SecretOpenError()
      const raw = Buffer.from(payload, 'base64url')
      if (raw.length < 28) throw new SecretOpenError()
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12))
        decipher.setAAD(Buffer.from(owner, 'utf8'))
        decipher.setAuthTag(raw.subarray(raw.length - 16))
        return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString('utf8')
      } catch {
        throw new SecretOpenError()
      }
    },
  }
}

/**
 * The master key from the environment, else from `$dataDir/master.key`,
 * generated once (mode 0600) when missing. `generated` tells the caller to warn.
 */
export function resolveMasterKey(envKey: string | undefined, dataDir: string): { key: string; fromFile: boolean; createdNow: boolean } {
  if (envKey) return { key: envKey, fromFile: false, createdNow: false }
  const path = join(dataDir, 'master.key')
  if (existsSync(path)) return { key: readFileSync(path, 'utf8').trim(), fromFile: true, createdNow: false }
  mkdirSync(dataDir, { recursive: true })
  const key = randomBytes(32).toString('base64url')
  writeFileSync(path, `${key}\n`, { mode: 0o600, flag: 'wx' })
  chmodSync(path, 0o600)
  return { key, fromFile: true, createdNow: true }
}

let _box: SecretsBox | undefined

export function initSecretsBox(masterKey: string): void {
  _box = createSecretsBox(masterKey)
}

export function getSecretsBox(): SecretsBox {
  if (!_box) throw new Error('secrets box is not initialised yet')
  return _box
}
