/** The panel's session cookie: set on the parent of PANEL_DOMAIN, read by /auth/forward. */
export const SESSION_COOKIE = 'panel_session'
