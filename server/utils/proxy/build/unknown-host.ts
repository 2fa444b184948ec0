import type { Json, UnknownHostAnswer } from './types'

/** `@id` of the last route of each server, so tests and tools can find it. */
export const UNKNOWN_HOST_ROUTE_ID = 'panel_unknown_host'

/**
 * The last route of each server: a request whose Host no enabled host names.
 * Without it Caddy answers an empty 200 and logs no status, so such a request
 * looked like success in the logs and on the dashboard. Plain HTTP answers 404
 * (nothing here by that name); HTTPS answers 421 Misdirected Request (RFC 9110
 * §15.5.20: the connection's certificate belongs to a site of this proxy, the
 * Host header to none). Routes without a host matcher come after Caddy's own
 * HTTP->HTTPS redirects (it inserts them after the last route with a host matcher),
 * so TLS hosts keep their redirects; ACME http-01 challenges are answered before
 * any route.
 *
 * Setting proxy.unknown_host_answer: '404' is the answer above (the default, byte
 * for byte what came before the setting); '421' answers 421 on plain HTTP too;
 * 'close' drops the connection without an answer, so a scanner learns nothing,
 * not even that a proxy is there. The answer is always the one-line text, never a
 * page of our own: a page names a host, and there is none here.
 */
export function buildUnknownHostRoute(server: 'http' | 'https', tlsNames: string[] = [], answer: UnknownHostAnswer = '404'): Json {
  const status = server === 'https' || answer === '421' ? 421 : 404
  return {
    '@id': `${UNKNOWN_HOST_ROUTE_ID}_${server}`,
    // On the plain server the names of TLS hosts are left to Caddy's redirect. It
    // inserts a redirect route per name only while it manages some certificate;
    // with uploaded certificates alone it has just its blanket redirect, appended
    // after every route, which this route would otherwise shadow. A `not` matcher
    // is no host matcher, so Caddy's insertion point stays the same.
    ...(tlsNames.length ? { match: [{ not: [{ host: tlsNames }] }] } : {}),
    handle: [
      answer === 'close'
        ? // Caddy's abort: the connection is closed before any byte of an answer (HTTP/2 resets the stream).
          { handler: 'static_response', abort: true }
        : {
            handler: 'static_response',
            status_code: status,
            headers: { 'Content-Type': ['text/plain; charset=utf-8'] },
            body: 'No site is configured for this host name.\n',
          },
    ],
    terminal: true,
  }
}
