import { mkdtempSync, statSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createSecretsBox, resolveMasterKey, SecretOpenError } from '../../server/utils/core/secrets'

const KEY = 'k'.repeat(40)

describe('secrets box — sealing', () => {
  it('round-trips a secret for the same owner', () => {
    const box = createSecretsBox(KEY)
    const sealed = box.seal('dns-token-123', 'dns_providers/provider_a/api_token')
    expect(sealed.startsWith('v1.')).toBe(true)
    expect(sealed).not.toContain('dns-token-123')
    expect(box.open(sealed, 'dns_providers/provider_a/api_token')).toBe('dns-token-123')
  })

  it('gives a different ciphertext each time (random IV)', () => {
    const box = createSecretsBox(KEY)
    expect(box.seal('x', 'o')).not.toBe(box.seal('x', 'o'))
  })

  it('detects tampering with the ciphertext', () => {
    const box = createSecretsBox(KEY)
    const sealed = box.seal('secret', 'settings/smtp.password')
    const raw = Buffer.from(sealed.slice(3), 'base64url')
    raw[14] ^= 0x01
    expect(() => box.open(`v1.${raw.toString('base64url')}`, 'settings/smtp.password')).toThrow(SecretOpenError)
  })

  it('refuses a ciphertext moved to another row or field', () => {
    const box = createSecretsBox(KEY)
    const sealed = box.seal('secret', 'users/1/totp_secret')
    expect(() => box.open(sealed, 'users/2/totp_secret')).toThrow(SecretOpenError)
    expect(() => box.open(sealed, 'users/1/other')).toThrow(SecretOpenError)
  })

  it('refuses to open with another master key, and the error names no secret', () => {
    const sealed = createSecretsBox(KEY).seal('very-secret-value', 'o')
    let message = ''
    try {
      createSecretsBox('another-master-key-of-32-characters!').open(sealed, 'o')
    } catch (e) {
      message = (e as Error).message
    }
    expect(message).toMatch(/cannot be decrypted/)
    expect(message).not.toContain('very-secret-value')
  })

  it('refuses an unknown version prefix', () => {
    const box = createSecretsBox(KEY)
    const sealed = box.seal('s', 'o')
    expect(() => box.open(sealed.replace(/^v1\./, 'v9.'), 'o')).toThrow(SecretOpenError)
  })
})

describe('resolveMasterKey — generated key file', () => {
  it('generates master.key once with mode 0600 and reuses it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mk-'))
    const first = resolveMasterKey(undefined, dir)
    expect(first.createdNow).toBe(true)
    expect(statSync(join(dir, 'master.key')).mode & 0o777).toBe(0o600)
    const second = resolveMasterKey(undefined, dir)
    expect(second.createdNow).toBe(false)
    expect(second.key).toBe(first.key)
    expect(readFileSync(join(dir, 'master.key'), 'utf8').trim()).toBe(first.key)
  })

  it('prefers the environment key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mk-'))
    expect(resolveMasterKey(KEY, dir)).toEqual({ key: KEY, fromFile: false, createdNow: false })
  })
})
