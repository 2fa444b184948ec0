import { hash, verify } from '@node-rs/argon2'

export const MIN_PASSWORD_LENGTH = 12

/** argon2id with the library's defaults (memory-hard, m=19 MiB, t=2). */
export function hashPassword(password: string): Promise<string> {
  return hash(password)
}

export async function verifyPassword(storedHash: string | null, password: string): Promise<boolean> {
  if (!storedHash) return false
  try { return await verify(storedHash, password) } catch { return false }
}

// Verifying against a fixed hash when the account does not exist keeps the
// answer time the same, so timing does not reveal which emails have accounts.
let _decoyHash: Promise<string> | undefined
export async function burnPasswordCheck(password: string): Promise<void> {
  _decoyHash ??= hash('decoy-password-for-timing')
  await verifyPassword(await _decoyHash, password)
}
