import { REDACTED } from '../core/redact'
import type { GeoKind } from './readers'

// A failed geolocation download in the operator's words: which database, the URL it was
// fetched from, what went wrong, and the setting to change. The text is stored in the
// runtime state, shown by the UI and the API, and logged, so the URL is shown without
// what could be a credential (a user:password, a license_key=... query value).

/** The setting of each database and its label in Settings -> Geolocation (ui/src/fields.ts). */
export const GEO_URL_SETTING: Record<GeoKind, { key: string; label: string; database: string }> = {
  country: { key: 'geoip.country_url', label: 'Country database URL', database: 'Country database' },
  asn: { key: 'geoip.asn_url', label: 'AS number database URL', database: 'AS number database' },
}

const _SECRET_PARAM = /key|token|secret|pass|auth|sig|license|credential/i

/** The URL as it may be shown: no user info, secret-looking query values replaced. */
export function shownUrl(url: string): string {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return url.length > 200 ? `${url.slice(0, 200)}…` : url
  }
  u.username = ''
  u.password = ''
  for (const name of [...u.searchParams.keys()]) if (_SECRET_PARAM.test(name)) u.searchParams.set(name, REDACTED)
  return u.toString()
}

const _CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused: nothing listens there',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved now',
  ECONNRESET: 'the connection was reset',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'the connection timed out',
  UND_ERR_SOCKET: 'the connection closed early',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'its TLS certificate is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'its TLS certificate is not trusted',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'its TLS certificate is not trusted',
  CERT_HAS_EXPIRED: 'its TLS certificate has expired',
  ERR_TLS_CERT_ALTNAME_INVALID: 'its TLS certificate is for another name',
  ENOENT: 'no such file',
}

/** Why a fetch (or a file read) failed, in a few words; fetch's own "fetch failed" says nothing. */
export function fetchFailureCause(err: unknown): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string; name?: string } }
  if (e?.name === 'TimeoutError' || e?.cause?.name === 'TimeoutError') return 'no complete answer in time'
  const code = e?.cause?.code ?? e?.code
  if (code && _CODES[code]) return _CODES[code]!
  if (code) return code
  return e?.cause?.message ?? e?.message ?? String(err)
}

/** The whole sentence for one database. `hadFile`: a working file stays in use, so say so (and only then). */
export function geoDownloadFailure(kind: GeoKind, url: string, problem: string, hadFile: boolean): string {
  const s = GEO_URL_SETTING[kind]
  // A cause may quote the URL (undici's refusals do): only ever the shown form.
  const cause = url ? problem.split(url).join(shownUrl(url)) : problem
  const what = url ? `the download from ${shownUrl(url)} failed (${cause})` : 'no download URL is set'
  const kept = hadFile ? ' The file downloaded before stays in use.' : ''
  return `${s.database}: ${what}. Check "${s.label}" in Settings -> Geolocation.${kept}`
}
