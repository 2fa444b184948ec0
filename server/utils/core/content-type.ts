// A Content-Type's MIME essence, parsed as browsers parse it (WHATWG MIME
// Sniffing, "parse a MIME type"): type "/" subtype, both HTTP tokens, before any
// ";" parameters. A browser sends text/plain, multipart/form-data and
// application/x-www-form-urlencoded across origins without asking first; only a
// parse that agrees with the browser's about the essence keeps such a body
// (text/plain; charset=application/json) from passing for JSON.

const _TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+"
// HTTP whitespace around the value; parameters are not this check's business.
const _MIME = new RegExp(`^[\\t\\n\\r ]*(${_TOKEN})/(${_TOKEN})[\\t\\n\\r ]*(?:;.*)?$`, 's')

/** "type/subtype" in lower case, or null for a value that is not a MIME type (absent, empty, a list, garbage). */
export function mimeEssenceOf(value: string | undefined | null): string | null {
  if (!value) return null
  const m = _MIME.exec(value)
  return m ? `${m[1]!.toLowerCase()}/${m[2]!.toLowerCase()}` : null
}

/**
 * Null when a body declared with this Content-Type may be read as JSON, else what
 * to fix (the 415's message). Only the essence application/json is JSON: no
 * Content-Type at all is refused too, since a browser sends a body of a Blob
 * without a type from any page without asking.
 */
export function jsonContentTypeProblem(value: string | undefined | null): string | null {
  const essence = mimeEssenceOf(value)
  if (essence === 'application/json') return null
  const got = !value ? 'none was sent' : essence ? `got ${essence}` : 'got a value that is not a MIME type'
  return `request body must be JSON: send a JSON object with Content-Type: application/json (${got})`
}
