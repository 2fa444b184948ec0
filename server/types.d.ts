import type { SessionUser } from './utils/auth/sessions'

declare module 'h3' {
  interface H3EventContext {
    /** Set by the session middleware for authenticated requests. */
    auth?: { user: SessionUser; sessionId: number; expiresAtMs: number }
  }
}
export {}
