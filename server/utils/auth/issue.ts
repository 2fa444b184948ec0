import type { H3Event } from 'h3'
import { getDb, runWrite } from '../core/db'
import { deleteSessionByToken } from './sessions'
import { readSessionCookie, setSessionCookie } from './cookie'

/**
 * Sets the cookie of a session just created, and ends the session the browser
 * carried before (if any): a login always rotates the session, so a token
 * planted in a browser before the login never becomes an authenticated one.
 */
export async function issueSessionCookie(event: H3Event, token: string): Promise<void> {
  const previous = readSessionCookie(event)
  if (previous && previous !== token && previous.length <= 128) await runWrite(() => deleteSessionByToken(getDb(), previous))
  setSessionCookie(event, token)
}
