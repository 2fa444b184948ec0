/** The panel's session cookie: set on the parent of PANEL_DOMAIN, read by /auth/forward. */
export const SESSION_COOKIE = 'panel_session'

// Strict session mode (setting auth.strict_sessions, docs/auth.md): the names below are kept in
// this module too, so that the proxy configuration builder strips them and imports nothing else of auth.

/** Strict mode over HTTPS: the session is host-only on the panel's name, and `__Host-` makes browsers refuse a copy planted by a sibling. */
export const HOST_SESSION_COOKIE = '__Host-panel_session'
/** Strict mode: ForwardAuth's own credential, host-only on one protected host, valid for /auth/forward only. */
export const FORWARD_AUTH_COOKIE = 'panel_fa'
/** Every cookie of the panel: the proxy takes them out of requests to upstreams and out of upstreams' Set-Cookie. */
export const PANEL_COOKIE_NAMES: readonly string[] = Object.freeze([SESSION_COOKIE, HOST_SESSION_COOKIE, FORWARD_AUTH_COOKIE])
/** Strict mode: the path every ForwardAuth-protected host hands to the panel, where the browser trades its one-time code for the credential. */
export const FORWARD_AUTH_CALLBACK_PATH = '/.panel-auth/callback'
/** The panel's own paths of that exchange: the start (on the panel's name) and the callback the proxy rewrites to. */
export const FORWARD_AUTH_START_ROUTE = '/auth/forward/start'
export const FORWARD_AUTH_CALLBACK_ROUTE = '/auth/forward/callback'
