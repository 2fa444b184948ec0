import { ACCESS_DENIED_BODY } from './access-list'
import { ENGINE_DOWN_BODY } from './crowdsec'
import { GEO_DENIED_BODY } from './geo'
import { LAN_GATE_BODY } from './lan-gate'
import type { HostSnapshot, Json, ProxySnapshot, Route } from './types'

// Pages of our own (docs/hosts.md, "Pages"): the panel's refusals and the
// upstream's failures answer a page that names the host, the time and Caddy's
// request id, which the access log row carries (`uuid`, once the page used
// {http.request.uuid}), so "why was I blocked?" is one log filter away.
// Nothing of the request is in a page: the host is the panel's own validated
// name, the rest are placeholders chosen here.

/** The statuses a page answers, with its title and what the visitor can do. */
export const PAGE_STATUSES: Record<number, { title: string; text: string; retry: boolean }> = {
  403: { title: 'Access denied', text: 'This site refused your request.', retry: false },
  429: { title: 'Too many requests', text: 'You sent too many requests in a short time. Wait a moment, then try again.', retry: false },
  502: { title: 'The site is not answering', text: 'The proxy could not reach the site.', retry: true },
  503: { title: 'The site is unavailable', text: 'The site cannot answer right now.', retry: true },
  504: { title: 'The site took too long to answer', text: 'The site did not answer in time.', retry: true },
}
/** A 5xx page reloads itself after this many seconds. */
export const PAGE_RETRY_SECONDS = 10

const _ID = '{http.request.uuid}'
const _TIME = '{time.now.http}'
const _REASON_VAR = 'panel_refusal'
/** The gate's reason (the panel's constant text), empty for a plugin's refusal or a failure. */
const _REASON = `{http.vars.${_REASON_VAR}}`
const _SITE_VAR = 'panel_site'
/** The host whose route ran (set first in its route, hostPageSite), so one error route serves every host. */
const _SITE = `{http.vars.${_SITE_VAR}}`
// The gates' own refusals (static answers) that become errors, so the host's page answers them.
const _GATE_BODIES = new Set([LAN_GATE_BODY, ACCESS_DENIED_BODY, GEO_DENIED_BODY, undefined])

/** Does this host answer pages: its own choice, else the global setting proxy.error_pages. */
export function hostShowsPages(host: HostSnapshot, snapshot: ProxySnapshot): boolean {
  return host.error_pages === 'on' || (host.error_pages === 'inherit' && snapshot.errorPages === true)
}

/**
 * The panel's gate routes (LAN gate, access-list IP rules, geo policies, the bans kept while the engine is down,
 * the engine-down 503) with their bare answer turned into an error, which the server's error routes answer with the page.
 * Routes of a host without pages come back unchanged (the same bytes as before pages existed).
 */
export function withPageRefusals(routes: Route[], host: HostSnapshot, snapshot: ProxySnapshot): Route[] {
  if (!hostShowsPages(host, snapshot)) return routes
  const convert = (handlers: Json[]): Json[] =>
    handlers.flatMap((h) => {
      const body = h.body as string | undefined
      if (h.handler === 'static_response' && h.status_code === 403 && _GATE_BODIES.has(body))
        // The gate's own reason ("Access denied: LAN only") goes on the page, through a variable the panel sets.
        return [...(body ? [{ handler: 'vars', [_REASON_VAR]: body.trim() }] : []), { handler: 'error', status_code: 403 }]
      // Failing closed while the engine is unreachable: the 503 page, with the reason and the same
      // Retry-After (set on the answer before the error; the error routes keep the headers, as the
      // rate limiter's Retry-After shows).
      if (h.handler === 'static_response' && h.status_code === 503 && body === ENGINE_DOWN_BODY)
        return [
          ...(h.headers ? [{ handler: 'headers', response: { set: h.headers } }] : []),
          { handler: 'vars', [_REASON_VAR]: body.trim() },
          { handler: 'error', status_code: 503 },
        ]
      if (h.handler === 'subroute')
        return [{ ...h, routes: (h.routes as Route[]).map((r) => ({ ...r, handle: convert(r.handle as Json[]) })) }]
      return [h]
    })
  return routes.map((r) => ({ ...r, handle: convert(r.handle as Json[]) }))
}

// Braces of the panel's own text are escaped for Caddy's replacer (\{ answers {); only _ID and _TIME stay placeholders.
const _literal = (s: string) => s.replace(/[{}]/g, (b) => `\\${b}`)
// Light and dark like the visitor's system; the braces escaped for Caddy's replacer.
const _STYLE = _literal(
  '<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:2em auto;padding:0 1em;color:#1a1a1a;background:#fff}' +
    'code{font-size:1.05em}@media (prefers-color-scheme:dark){body{color:#eee;background:#161616}}</style></head><body>',
)
const _html = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** The operator's message for a host: its own, else the global one; null when neither. */
export function pageMessage(host: HostSnapshot, snapshot: ProxySnapshot): string | null {
  return host.error_page_message || snapshot.errorPageMessage || null
}

function _bodies(status: number, note: string | null): { html: string; json: string; text: string } {
  const page = PAGE_STATUSES[status]!
  const retry = page.retry ? ` This page tries again by itself every ${PAGE_RETRY_SECONDS} seconds.` : ''
  const html =
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    (page.retry ? `<meta http-equiv="refresh" content="${PAGE_RETRY_SECONDS}">` : '') +
    `<title>${status} ${page.title}</title>` +
    _STYLE +
    `<h1>${page.title}</h1><p>${_literal(page.text)}${retry}</p><p>${_REASON}</p>` +
    (note ? `<p class="note">${_literal(_html(note))}</p>` : '') +
    `<dl><dt>Site</dt><dd>${_SITE}</dd><dt>Time</dt><dd>${_TIME}</dd><dt>Request id</dt><dd><code>${_ID}</code></dd></dl>` +
    "<p>If you think this is a mistake, give the request id to the site's operator: it finds this request in the logs.</p>" +
    '</body></html>\n'
  const message = `${status} ${page.title}: ${page.text}`
  const fields = { error: message, reason: 'REASON', ...(note ? { message: note } : {}), host: 'SITE', request_id: 'ID', time: 'TIME' }
  // The operator's note is JSON-escaped by stringify, then brace-escaped: it cannot end the string or name a placeholder.
  const json = _literal(JSON.stringify(fields))
    .replace('"REASON"', `"${_REASON}"`)
    .replace('"host":"SITE"', `"host":"${_SITE}"`)
    .replace('"request_id":"ID"', `"request_id":"${_ID}"`)
    .replace('"time":"TIME"', `"time":"${_TIME}"`)
  const text = `${_literal(message)}${retry}\n${_REASON}\n${note ? `${_literal(note)}\n` : ''}Site: ${_SITE}\nTime: ${_TIME}\nRequest id: ${_ID}\n`
  return { html, json: `${json}\n`, text }
}

function _answer(status: number, type: string, body: string): Json {
  return {
    handler: 'static_response',
    status_code: status,
    headers: { 'Content-Type': [type], 'Cache-Control': ['no-store'], 'X-Content-Type-Options': ['nosniff'] },
    body,
  }
}

/**
 * The first handler of a host that shows pages: its name in a variable the shared error routes print.
 * HTML-escaped here (the same text in the three formats for a valid host name), as the page
 * printed it before; a name never holds a brace (assertSafeHostname), so the value is literal.
 */
export function hostPageSite(host: HostSnapshot, snapshot: ProxySnapshot): Route[] {
  return hostShowsPages(host, snapshot) ? [{ handle: [{ handler: 'vars', [_SITE_VAR]: _html(host.domain) }] }] : []
}

/**
 * One error route for every host with the same operator's message: per status, HTML for a browser,
 * JSON when asked for, plain text otherwise. It matches the hosts by the variable their own route
 * set (not by name), so the page is that host's even where names overlap. One route per message
 * instead of one per host: 1,000 hosts' pages cost Caddy ~3 s and ~200 MB to load
 * (docs/performance.md, "What a plain host costs Caddy").
 */
function _sharedErrorRoute(hosts: HostSnapshot[], note: string | null): Route {
  const routes = Object.keys(PAGE_STATUSES).map((key) => {
    const status = Number(key)
    const b = _bodies(status, note)
    return {
      match: [{ vars: { '{http.error.status_code}': [key] } }],
      handle: [
        {
          handler: 'subroute',
          routes: [
            { match: [{ header: { Accept: ['*text/html*'] } }], handle: [_answer(status, 'text/html; charset=utf-8', b.html)] },
            { match: [{ header: { Accept: ['*application/json*'] } }], handle: [_answer(status, 'application/json', b.json)] },
            { handle: [_answer(status, 'text/plain; charset=utf-8', b.text)] },
          ],
        },
      ],
    }
  })
  return { match: [{ vars: { [_SITE]: hosts.map((h) => _html(h.domain)) } }], handle: [{ handler: 'subroute', routes }], terminal: true }
}

/**
 * A server's `errors` (Caddy's handle_errors) for its hosts (plain ones on http, TLS ones on https)
 * that show pages; {} when none does, so the server's JSON is what it was. Another error (401 of
 * basic auth...) still gets Caddy's bare answer.
 */
export function buildServerErrorPages(server: 'http' | 'https', hosts: HostSnapshot[], snapshot: ProxySnapshot): Json {
  const byNote = new Map<string | null, HostSnapshot[]>()
  for (const h of hosts)
    if ((h.tls_mode === 'none') === (server === 'http') && hostShowsPages(h, snapshot)) {
      const note = pageMessage(h, snapshot)
      byNote.set(note, [...(byNote.get(note) ?? []), h])
    }
  const routes = [...byNote].map(([note, group]) => _sharedErrorRoute(group, note))
  return routes.length ? { errors: { routes } } : {}
}

/**
 * The bouncer writes its 403 itself unless `enable_caddy_error` makes it return an error (checked
 * against the production proxy), which the error routes can answer. Set only when some host shows
 * pages: the hosts without get Caddy's bare 403 for that error, as before, and with no host showing
 * pages the app's JSON is what it was.
 */
export function bouncerErrorOption(hosts: HostSnapshot[], snapshot: ProxySnapshot): Json {
  return hosts.some((h) => hostShowsPages(h, snapshot)) ? { enable_caddy_error: true } : {}
}
