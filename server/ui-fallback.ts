import { defineEventHandler, setResponseHeader } from 'h3'
import { useStorage } from 'nitropack/runtime'
import { resolveSession } from './utils/auth/sessions'
import { readSessionCookie } from './utils/auth/cookie'
import { pathNotFound } from './utils/core/errors'

// Every page of the web UI (/, /login, /hosts/12, ...) is answered with the
// SPA's index.html; real files under ui/dist are served before this by the
// public assets handler. The page carries a hint whether the browser's cookie
// holds a valid session (<meta name="panel-session">): the cookie is HttpOnly,
// and without the hint the app could only learn "logged out" from a 401, which
// the browser logs as a console error on every visit to the login page. /api/* never falls back: an unknown API path stays a JSON 404.
// GET only (nitro.config.ts): another method on an unknown path is a 405, and a
// wrong method on a real route keeps its 405 instead of landing here.
export default defineEventHandler(async (event) => {
  const path = event.path.split('?')[0]!
  const notFound = () => pathNotFound(`no route for ${event.method} ${path}`)
  // A missing file (/favicon.ico, /assets/old-hash.js) is a 404, not the app.
  if (path === '/api' || path.startsWith('/api/') || path.startsWith('/auth/') || (/\.[a-z0-9]+$/i.test(path) && path !== '/index.html'))
    throw notFound()
  const html = await useStorage('assets:ui').getItem<string>('index.html')
  if (!html) throw pathNotFound('the web UI is not built: run npm run build')
  const page = typeof html === 'string' ? html : new TextDecoder().decode(html as any)
  const session = await resolveSession(readSessionCookie(event))
  setResponseHeader(event, 'content-type', 'text/html; charset=utf-8')
  setResponseHeader(event, 'cache-control', 'no-store')
  return page.replace('</head>', `<meta name="panel-session" content="${session ? 'active' : 'none'}"></head>`)
})
