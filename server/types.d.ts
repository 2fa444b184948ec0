import type { SessionUser } from './utils/auth/sessions'

declare module 'h3' {
  interface H3EventContext {
    /** Set by the session middleware for authenticated requests. */
    auth?: {
      user: SessionUser
      sessionId: number
      expiresAtMs: number
      /** Set when the request authenticated with an API token (Authorization: Bearer) instead of the cookie. */
      apiToken?: { id: number; name: string; scope: 'read' | 'admin' }
    }
  }
}
