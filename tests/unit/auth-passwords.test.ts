import { describe, expect, it } from 'vitest'
import { passwordProblem, verifyPassword, hashPassword } from '../../server/utils/auth/passwords'
import { createUserBody, updateUserBody, setupBody } from '../../server/utils/auth/schemas'

describe('password rules', () => {
  it('at least 12 characters, at most 256', () => {
    expect(passwordProblem('a'.repeat(11), undefined)).toMatch(/at least 12/)
    expect(passwordProblem('a'.repeat(12), undefined)).toBeUndefined()
    expect(passwordProblem('a'.repeat(257), undefined)).toMatch(/at most 256/)
  })
  it('not the email address nor its local part, whatever the case', () => {
    expect(passwordProblem('Someone.Long@Example.test', 'someone.long@example.test')).toMatch(/email/)
    expect(passwordProblem('SOMEONE.LONG', 'someone.long@example.test')).toMatch(/email/)
    expect(passwordProblem('someone.long!', 'someone.long@example.test')).toBeUndefined()
  })
  it('applies to setup, user creation and update bodies', () => {
    const email = 'operator.person@example.test'
    expect(setupBody.safeParse({ email, password: email }).success).toBe(false)
    expect(createUserBody.safeParse({ email, password: email, role: 'viewer' }).success).toBe(false)
    expect(updateUserBody.safeParse({ email, name: '', role: 'viewer', password: 'OPERATOR.PERSON' }).success).toBe(false)
    expect(updateUserBody.safeParse({ email, name: '', role: 'viewer' }).success).toBe(true)
    expect(createUserBody.safeParse({ email, password: 'a fine long password', role: 'viewer' }).success).toBe(true)
  })
  it('hashes with argon2id and verifies', async () => {
    const h = await hashPassword('a fine long password')
    expect(h).toMatch(/^\$argon2id\$/)
    expect(await verifyPassword(h, 'a fine long password')).toBe(true)
    expect(await verifyPassword(h, 'a fine long passworD')).toBe(false)
    expect(await verifyPassword(null, 'anything')).toBe(false)
  })
})
