// vitest setupFiles: every fetch of the test process asks for a connection of its own
// (`Connection: close`), so no request is ever written on an idle kept-alive connection.
//
// Why: the panel (Node's HTTP server) closes an idle connection after 5 s, and Node's
// fetch (undici) drops its idle connections on a timer of its own set a little shorter.
// On a loaded machine the client's timer runs late, or the server's close is not yet
// read when the next request goes out: that request is written on a connection the
// server has just closed and fails with UND_ERR_SOCKET "other side closed" (seen as the
// first request after startProxyStack). A panel restarted on the same port leaves the
// same kind of dead connection in the pool. A fresh loopback connection per request
// costs a handshake (well under a millisecond) and removes the race instead of narrowing
// it. tests/support/http.ts's httpRequest already does the same (agent: false, close).
// A caller that sets its own Connection header keeps it.
const _fetch = globalThis.fetch
globalThis.fetch = (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined))
  if (!headers.has('connection')) headers.set('connection', 'close')
  return _fetch(input, { ...init, headers })
}
