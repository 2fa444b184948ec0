import { describe, expect, it } from 'vitest'
import { generateHOTP, generateTOTP } from '@oslojs/otp'
import { generateRecoveryCodes, hashRecoveryCode, matchTotpStep, totpStepAt } from '../../server/utils/auth/totp'

const KEY = new TextEncoder().encode('12345678901234567890') // the RFC 6238 SHA-1 seed
const STEP = 30_000

describe('RFC 6238 through @oslojs/otp', () => {
  it('reproduces the RFC test vector (T = 59 s, 8 digits)', () => {
    expect(generateHOTP(KEY, BigInt(totpStepAt(59_000)), 8)).toBe('94287082')
    expect(generateHOTP(KEY, BigInt(totpStepAt(1_111_111_109_000)), 8)).toBe('07081804')
  })
  it('agrees with generateTOTP at the current time', () => {
    expect(generateHOTP(KEY, BigInt(totpStepAt(Date.now())), 6)).toBe(generateTOTP(KEY, 30, 6))
  })
})

describe('matchTotpStep', () => {
  const at = 1_000 * STEP + 10_000 // inside step 1000
  const code = (step: number) => generateHOTP(KEY, BigInt(step), 6)

  it('accepts the current step and one either side, not two', () => {
    expect(matchTotpStep(KEY, code(1000), at, 0)).toBe(1000)
    expect(matchTotpStep(KEY, code(999), at, 0)).toBe(999)
    expect(matchTotpStep(KEY, code(1001), at, 0)).toBe(1001)
    expect(matchTotpStep(KEY, code(998), at, 0)).toBeNull()
    expect(matchTotpStep(KEY, code(1002), at, 0)).toBeNull()
  })
  it('refuses a step that is not newer than the last accepted one (replay)', () => {
    expect(matchTotpStep(KEY, code(1000), at, 1000)).toBeNull()
    expect(matchTotpStep(KEY, code(999), at, 1000)).toBeNull()
    expect(matchTotpStep(KEY, code(1001), at, 1000)).toBe(1001)
  })
  it('refuses anything that is not six digits', () => {
    for (const bad of ['', '12345', '1234567', 'abcdef', ` ${code(1000)}`]) expect(matchTotpStep(KEY, bad, at, 0)).toBeNull()
  })
})

describe('recovery codes', () => {
  it('are ten distinct 80-bit codes shown as xxxx-xxxx-xxxx-xxxx', () => {
    const codes = generateRecoveryCodes()
    expect(codes).toHaveLength(10)
    expect(new Set(codes).size).toBe(10)
    for (const c of codes) expect(c).toMatch(/^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/)
  })
  it('hash the same whatever the case and dashes, and differently per user', () => {
    const [c] = generateRecoveryCodes(1)
    expect(hashRecoveryCode(7, c!)).toBe(hashRecoveryCode(7, c!.toUpperCase().replace(/-/g, ' ')))
    expect(hashRecoveryCode(7, c!)).not.toBe(hashRecoveryCode(8, c!))
    expect(hashRecoveryCode(7, c!)).not.toContain(c!.replace(/-/g, ''))
  })
})
