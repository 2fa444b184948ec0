import { describe, expect, it } from 'vitest'
import { effectiveRoleOf, tokenStateOf, type ApiTokenRow } from '../../server/utils/auth/api-tokens'
import { createApiTokenBody } from '../../server/utils/auth/schemas'

describe('effectiveRoleOf — a token never above its owner', () => {
  const cases: Array<[Parameters<typeof effectiveRoleOf>[0], Parameters<typeof effectiveRoleOf>[1], string]> = [
    ['admin', 'admin', 'admin'],
    ['admin', 'viewer', 'viewer'],
    ['read', 'admin', 'viewer'],
    ['read', 'viewer', 'viewer'],
  ]
  for (const [scope, role, expected] of cases)
    it(`${scope} token of a ${role}: ${expected}`, () => expect(effectiveRoleOf(scope, role)).toBe(expected))
})

describe('tokenStateOf', () => {
  const row = (over: Partial<ApiTokenRow>): ApiTokenRow => ({
    id: 1,
    userId: 1,
    name: 'x',
    scope: 'read',
    tokenHash: 'h',
    prefix: 'ept_abcdef',
    createdAtMs: 0,
    expiresAtMs: null,
    lastUsedAtMs: null,
    lastUsedIp: null,
    revokedAtMs: null,
    revokedBy: null,
    ...over,
  })
  it('revoked wins over expired; no expiry stays active', () => {
    expect(tokenStateOf(row({}), 10)).toBe('active')
    expect(tokenStateOf(row({ expiresAtMs: 10 }), 10)).toBe('expired')
    expect(tokenStateOf(row({ expiresAtMs: 11 }), 10)).toBe('active')
    expect(tokenStateOf(row({ expiresAtMs: 5, revokedAtMs: 1 }), 10)).toBe('revoked')
  })
})

describe('createApiTokenBody', () => {
  it('accepts no expiry, days or a future timestamp; refuses both at once and the past', () => {
    expect(createApiTokenBody.safeParse({ name: 'ci', scope: 'read' }).success).toBe(true)
    expect(createApiTokenBody.safeParse({ name: 'ci', scope: 'read', expires_at: null }).success).toBe(true)
    expect(createApiTokenBody.safeParse({ name: 'ci', scope: 'admin', expires_in_days: 30 }).success).toBe(true)
    expect(
      createApiTokenBody.safeParse({ name: 'ci', scope: 'read', expires_at: new Date(Date.now() + 86_400_000).toISOString() }).success,
    ).toBe(true)
    expect(createApiTokenBody.safeParse({ name: 'ci', scope: 'read', expires_at: new Date(Date.now() - 1000).toISOString() }).success).toBe(
      false,
    )
    expect(
      createApiTokenBody.safeParse({
        name: 'ci',
        scope: 'read',
        expires_in_days: 3,
        expires_at: new Date(Date.now() + 86_400_000).toISOString(),
      }).success,
    ).toBe(false)
    expect(createApiTokenBody.safeParse({ name: '  ', scope: 'read' }).success).toBe(false)
  })
})
