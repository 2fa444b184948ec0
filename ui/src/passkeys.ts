import { browserSupportsWebAuthn, startAuthentication, startRegistration } from '@simplewebauthn/browser'
import { api } from './api'

// The browser side of passkeys: the panel sends WebAuthn options as JSON, the library turns them
// into navigator.credentials calls and the answer back into JSON for the panel to verify.

export const passkeysSupported = () => browserSupportsWebAuthn()

/** The browser's refusals in words: cancelling the prompt is the common one and is not an error of the panel. */
export function passkeyErrorText(e: unknown): string | null {
  const name = (e as { name?: string })?.name
  if (name === 'NotAllowedError' || name === 'AbortError') return 'The passkey prompt was closed or timed out. Try again when ready.'
  if (name === 'InvalidStateError') return 'This passkey is already registered for your account.'
  if (name === 'SecurityError') return 'This browser refused the passkey for this address: open the panel at its public address.'
  return null
}

export async function registerPasskey(name: string): Promise<unknown> {
  const optionsJSON = await api('/api/auth/passkeys/options', { method: 'POST', body: {} })
  const response = await startRegistration({ optionsJSON })
  return api('/api/auth/passkeys', { method: 'POST', body: { name, response } })
}

/** A login with a passkey alone (`second`: false), or the second step of a password login (true). */
export async function signInWithPasskey(second: boolean): Promise<unknown> {
  const base = second ? '/api/auth/login/passkey' : '/api/auth/passkeys/login'
  const optionsJSON = await api(`${base}/options`, { method: 'POST', body: {} })
  const response = await startAuthentication({ optionsJSON })
  return api(base, { method: 'POST', body: { response } })
}
