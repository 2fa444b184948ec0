/**
 * Where to go after login, from `?rd=`: a path of this app, or an http(s) URL on the
 * panel's own host or under its parent domain (ForwardAuth sends those). Anything else
 * (other sites, backslashes, control characters, protocol-relative //host) goes to `/`.
 */
export function safeReturnTarget(target: string, here: { hostname: string; origin: string }): { internal?: string; external?: string } {
  if (!target || /[\\\u0000-\u001f\u007f]/.test(target)) return { internal: '/' }
  if (target.startsWith('/') && !target.startsWith('//')) {
    // The server's own pages (strict session mode's /auth/forward/start) are not routes of this app: a full load.
    if (target.startsWith('/auth/')) return { external: `${here.origin}${target}` }
    return { internal: target.startsWith('/login') ? '/' : target }
  }
  try {
    const u = new URL(target)
    const parent = here.hostname.split('.').slice(1).join('.')
    const onSite = u.hostname === here.hostname || (parent.includes('.') && (u.hostname === parent || u.hostname.endsWith(`.${parent}`)))
    if ((u.protocol === 'https:' || u.protocol === 'http:') && onSite && !u.username && !u.password) {
      if (u.origin !== here.origin) return { external: u.href }
      const path = u.pathname + u.search + u.hash
      if (path.startsWith('/auth/')) return { external: u.href }
      return { internal: path.startsWith('/login') ? '/' : path }
    }
  } catch {
    /* not a URL */
  }
  return { internal: '/' }
}
