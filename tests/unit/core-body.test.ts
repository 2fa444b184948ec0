import { describe, expect, it } from 'vitest'
import { bodyLimitFor, JSON_BODY_LIMIT_BYTES, PUBLIC_BODY_LIMIT_BYTES } from '../../server/utils/core/body'
import { listOperations } from '../../server/utils/openapi/document'

// The per-route body limits (server/utils/core/body.ts) against the document: a route anyone
// may call with a body gets the smallest limit, so a public route added later cannot silently
// take 1 MiB from anonymous clients.

describe('bodyLimitFor', () => {
  const withBody = listOperations().filter((op) => op.body || op.multipart)

  it('every public operation that takes a body has the public limit', () => {
    const publicOps = withBody.filter((op) => op.access === 'public')
    expect(publicOps.map((op) => `${op.method.toUpperCase()} ${op.path}`).sort()).toEqual([
      'POST /api/auth/login',
      'POST /api/auth/login/passkey',
      'POST /api/auth/login/passkey/options',
      'POST /api/auth/login/totp',
      'POST /api/auth/passkeys/login',
      'POST /api/auth/passkeys/login/options',
      'POST /api/setup',
    ])
    for (const op of publicOps) expect(bodyLimitFor(op.path), op.path).toBe(PUBLIC_BODY_LIMIT_BYTES)
  })

  it('every other operation has 1 MiB, the NPM database upload 64 MiB and the backup upload 256 MiB, each with its framing', () => {
    const uploads = ['/api/import/npm', '/api/backups/restore']
    for (const op of withBody.filter((o) => o.access !== 'public' && !uploads.includes(o.path)))
      expect(bodyLimitFor(op.path), op.path).toBe(JSON_BODY_LIMIT_BYTES)
    expect(bodyLimitFor('/api/import/npm')).toBe(64 * 1024 * 1024 + 64 * 1024)
    expect(bodyLimitFor('/api/backups/restore')).toBe(256 * 1024 * 1024 + 64 * 1024)
  })
})
