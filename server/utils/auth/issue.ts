import { getCookie, type H3Event } from 'h3'
import { getDb, runWrite } from '../core/db'
import { SESSION_COOKIE, deleteSessionByToken } from './sessions'
import { setSessionCookie } from './cookie'

/**
 * Sets the cookie of a session just created, and ends the session the browser
 * carried before (if any): a login always rotates the session, so a token
 * planted in a browser before the login never becomes an authenticated one.
 */
export async function issueSessionCookie(event: H3Event, token: string): Promise<void> {
  const previous = getCookie(event, SESSION_COOKIE)
  if (previous && previous !== token && previous.length <= 128) await runWrite(() => deleteSessionByToken(getDb(), previous))
  setSessionCookie(event, token)
}
