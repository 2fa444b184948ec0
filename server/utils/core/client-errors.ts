import { Server } from 'node:http'
import type { Duplex } from 'node:stream'

// Requests Node refuses before any handler runs (a request line and headers over
// its 16 KiB limit, a malformed request) get Node's bare status line with no
// body. A 'clientError' listener answers them with the {"error"} body every
// other error has. The node-server entry creates its HTTP server after the
// plugins ran and exposes no hook, so the listener is attached when that server
// first listens (the one server this process has).

const _ANSWERS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [
    431,
    'Request Header Fields Too Large',
    'request line and headers are over 16 KiB: shorten the query string or the cookies',
  ],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'Payload Too Large', 'chunk extensions are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'the request was not received in time'],
}

/** The raw HTTP answer to a request Node could not parse. */
export function clientErrorResponse(code: string | undefined): string {
  const [status, reason, message] = _ANSWERS[code ?? ''] ?? [400, 'Bad Request', 'malformed HTTP request']
  const body = JSON.stringify({ error: message })
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`
}

function _onClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  socket.end(clientErrorResponse(err.code))
}

let _installed = false
export function answerClientErrorsWithJson(): void {
  if (_installed) return
  _installed = true
  const listen = Server.prototype.listen
  Server.prototype.listen = function (this: Server, ...args: unknown[]) {
    if (!this.listenerCount('clientError')) this.on('clientError', _onClientError)
    return (listen as (...a: unknown[]) => Server).apply(this, args)
  } as typeof listen
}
