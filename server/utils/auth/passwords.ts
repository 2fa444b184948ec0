import { hash, verify } from '@node-rs/argon2'

export const MIN_PASSWORD_LENGTH = 12

/** argon2id with the library's defaults (memory-hard, m=19 MiB, t=2). */
export function hashPassword(password: string): Promise<string> {
  return hash(password)
}

export async function verifyPassword(storedHash: string | null, password: string): Promise<boolean> {
  if (!storedHash) return false
  try {
    return await verify(storedHash, password)
  } catch {
    return false
  }
}

// Verifying against a fixed hash when the account does not exist keeps the
// answer time the same, so timing does not reveal which emails have accounts.
let _decoyHash: Promise<string> | undefined
export async function burnPasswordCheck(password: string): Promise<void> {
  await verifyPassword(await warmPasswordDecoy(), password)
}

/** Computed at boot, so that the first unknown-email login does not also pay for hashing the decoy. */
export function warmPasswordDecoy(): Promise<string> {
  _decoyHash ??= hash('decoy-password-for-timing')
  return _decoyHash
}

/** Password rules: 12 to 256 characters, and not the account's email (nor its local part). */
export function passwordProblem(password: string, email: string | undefined): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) return `must be at least ${MIN_PASSWORD_LENGTH} characters`
  if (password.length > 256) return 'must be at most 256 characters'
  if (email) {
    const p = password.trim().toLowerCase()
    const e = email.trim().toLowerCase()
    if (p === e || p === e.split('@')[0]) return 'must not be the email address'
  }
  return undefined
}
