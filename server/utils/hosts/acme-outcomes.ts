import { getDb, writeTransaction, type Executor } from '../core/db'
import { readRuntimeState, writeRuntimeState } from '../core/runtime-state'

// The last ACME outcome of every certificate name, as the proxy logged it
// (tls.obtain / tls.renew lines of its error log, ingested with the other
// lines): a failure keeps the proxy's error and says its cause in words, so the
// host and the certificates screen can show why a certificate is missing.
// Derived from the proxy's log like the log rows themselves, not an operator's
// change: no audit row.

export type AcmeFailureKind =
  | 'dns_server_unreachable'
  | 'dns_update_refused'
  | 'dns_zone_not_found'
  | 'dns_txt_not_visible'
  | 'dns_propagation_timeout'
  | 'ca_unreachable'
  | 'challenge_failed'
  | 'other'

export interface AcmeFailure {
  name: string
  at: string
  operation: 'obtain' | 'renew'
  kind: AcmeFailureKind
  cause: string
  error: string
}
interface _Outcome {
  ok: boolean
  at: string
  operation: 'obtain' | 'renew'
  kind?: AcmeFailureKind
  cause?: string
  error?: string
}

const _STATE_KEY = 'acme.outcomes'
/** Names no host uses any more stay until pushed out by newer ones. */
const _MAX_NAMES = 2_000
const _MAX_ERROR_CHARS = 500

/** The proxy's error without the order and CA URLs certmagic appends, nor the leading "[name] ". */
function _trim(error: string): string {
  return error
    .replace(/\s*\((?:order|ca)=[^)]*\)/g, '')
    .replace(/^\[[^\]]+\]\s*/, '')
    .trim()
    .slice(0, _MAX_ERROR_CHARS)
}

/**
 * Pure: what went wrong, in words, from the error certmagic logs with "could not
 * get certificate from issuer". Texts seen with caddy-dns/rfc2136 v1.0.0, BIND 9.18
 * and Pebble 2.4 (tests/integration/tls.dns01-rfc2136.test.ts); the cloud modules'
 * HTTP errors fall to the generic DNS-provider case.
 */
export function explainAcmeFailure(error: string): { kind: AcmeFailureKind; cause: string } {
  const e = _trim(error)
  const zoneOf = /adding temporary record for zone "([^"]+?)\.?"/.exec(e)?.[1]
  let m: RegExpExecArray | null
  if (zoneOf && (m = /dial (?:tcp|udp) ([^\s:]+:\d+|\[[^\]]+\]:\d+): (?:connect: )?([^(]+?)\s*$/.exec(e)))
    return {
      kind: 'dns_server_unreachable',
      cause: `the DNS server ${m[1]} could not be reached to add the challenge record for zone ${zoneOf} (${m[2]}): check the server address and that the proxy may reach it on TCP`,
    }
  if (zoneOf && /(?:i\/o timeout|context deadline exceeded|no such host|network is unreachable|no route to host)/.test(e))
    return {
      kind: 'dns_server_unreachable',
      cause: `the DNS server could not be reached to add the challenge record for zone ${zoneOf} (${/(i\/o timeout|context deadline exceeded|no such host|network is unreachable|no route to host)/.exec(e)![1]})`,
    }
  if (zoneOf && /dns: bad (?:authentication|signature|key)|BADSIG|BADKEY|BADTIME/i.test(e))
    return {
      kind: 'dns_update_refused',
      cause: `the DNS server refused the update to zone ${zoneOf}: it did not accept the TSIG signature (the key name, secret or algorithm differ from the server's, or the clocks differ by more than 5 minutes)`,
    }
  if (zoneOf && (m = /dns response error code "([A-Z]+)"/.exec(e))) {
    const why: Record<string, string> = {
      REFUSED:
        "the key is not allowed to change this name (the zone's update-policy or allow-update), or the server does not take updates for the zone",
      NOTAUTH: 'the server is not authoritative for the zone or did not accept the key',
      NOTZONE: 'the name is not inside the zone the update was sent to',
      SERVFAIL: 'the server failed while applying it',
    }
    return {
      kind: 'dns_update_refused',
      cause: `the DNS server refused the update to zone ${zoneOf} (${m[1]}): ${why[m[1]!] ?? 'see the error'}`,
    }
  }
  // The zone (SOA) lookup asks the configured resolvers first: for provider_c that is the update server itself.
  if (
    (m =
      /could not determine zone for domain "([^"]+)": .*?(?:(?:read|dial) (?:udp|tcp) (?:[^\s>]+->)?([^\s:]+:\d+|\[[^\]]+\]:\d+): (?:read: |connect: )?)?(connection refused|i\/o timeout|no route to host|network is unreachable|no such host)/.exec(
        e,
      ))
  )
    return {
      kind: 'dns_server_unreachable',
      cause: `the DNS server ${m[2] ? `${m[2]} ` : ''}could not be reached to look up the zone of ${m[1]} (${m[3]}): check the server address and that the proxy may reach it`,
    }
  if ((m = /could not determine zone for domain "([^"]+)": (.+)$/.exec(e)))
    return {
      kind: 'dns_zone_not_found',
      cause: `the zone holding ${m[1]} could not be found: the DNS server asked for its SOA answered "${m[2]}" (is the name inside a zone this server serves?)`,
    }
  if (/timed out waiting for record to fully propagate/.test(e))
    return {
      kind: 'dns_propagation_timeout',
      // certmagic says this when its wait (the provider's propagation_timeout) ran out before any CA was asked.
      cause:
        "the DNS provider took the challenge TXT record but it never appeared on the DNS servers checked within the propagation wait, so the CA was not asked to check it: the provider is slow to publish (raise its propagation wait under DNS providers) or those servers do not serve what it writes (the provider's propagation servers, else the zone's authoritative ones)",
    }
  if (/urn:ietf:params:acme:error:(?:unauthorized|dns)\b/.test(e) && /TXT/.test(e))
    return {
      kind: 'dns_txt_not_visible',
      cause: `the CA could not see the challenge TXT record (${e.replace(/^.*urn:ietf:params:acme:error:\w+\s*-\s*/, '')}): the DNS servers the CA asks do not serve what the update added; check the zone's delegation and that its secondaries are up to date`,
    }
  if (zoneOf)
    return {
      kind: 'dns_update_refused',
      cause: `the DNS provider could not add the challenge record for zone ${zoneOf}: ${e.replace(/^.*adding temporary record for zone "[^"]+": /, '')}`,
    }
  if (
    /(?:fetching (?:new nonce|directory)|performing request|creating new order)[\s\S]*?(?:connection refused|i\/o timeout|no such host|certificate signed by unknown authority)/.test(
      e,
    )
  ) {
    // Where: the directory certmagic names in "(ca=…)" (left out of the error shown), else the URL the request went to.
    const where = /\(ca=([^)\s]+)\)/.exec(error)?.[1] ?? /(?:Get|Head|Post) "([^"]+)"/.exec(e)?.[1]
    return {
      kind: 'ca_unreachable',
      cause: `the ACME CA could not be reached: ${e.replace(/^.*?: (?=[^:]*$)/, '')}${where ? ` (at ${where})` : ''}; check the ACME directory URL (the host's own, or "Default ACME directory URL" in Settings) and that the proxy can reach it`,
    }
  }
  if (/urn:ietf:params:acme:error:/.test(e))
    return { kind: 'challenge_failed', cause: `the CA refused the challenge: ${e.replace(/^.*urn:ietf:params:acme:error:/, '')}` }
  return { kind: 'other', cause: e }
}

/** An attempt the proxy itself abandoned (a configuration push replaced the one it ran under): not an outcome. */
export function isAbandonedAttempt(error: string): boolean {
  return /: context canceled\s*(?:\(order=[^)]*\))?\s*(?:\(ca=[^)]*\))?\s*$/.test(error) || error.trim() === 'context canceled'
}

export interface AcmeLogLine {
  name: string
  ok: boolean
  operation: 'obtain' | 'renew'
  atMs: number
  error?: string
}

/** Stores the outcome of each line (the newest per name wins); returns the failures, explained, each with its line. */
export async function recordAcmeOutcomes<L extends AcmeLogLine>(lines: L[]): Promise<Array<AcmeFailure & { line: L }>> {
  if (!lines.length) return []
  const failures: Array<AcmeFailure & { line: L }> = []
  await writeTransaction(async (tx) => {
    const all = (await readRuntimeState<Record<string, _Outcome>>(_STATE_KEY, tx)) ?? {}
    for (const l of lines) {
      if (!l.ok && isAbandonedAttempt(l.error ?? '')) continue
      const at = new Date(l.atMs).toISOString()
      if (all[l.name] && all[l.name]!.at > at) continue
      if (l.ok) {
        all[l.name] = { ok: true, at, operation: l.operation }
        continue
      }
      const error = _trim(l.error ?? '')
      const { kind, cause } = explainAcmeFailure(l.error ?? '')
      all[l.name] = { ok: false, at, operation: l.operation, kind, cause, error }
      failures.push({ name: l.name, at, operation: l.operation, kind, cause, error, line: l })
    }
    const names = Object.keys(all)
    if (names.length > _MAX_NAMES)
      for (const n of names.sort((a, b) => all[a]!.at.localeCompare(all[b]!.at)).slice(0, names.length - _MAX_NAMES)) delete all[n]
    await writeRuntimeState(tx, _STATE_KEY, all)
  })
  return failures
}

/** The newest failure among `names` that no later success replaced, or null. */
export async function lastAcmeFailures(exec: Executor = getDb()): Promise<(names: string[]) => AcmeFailure | null> {
  const all = (await readRuntimeState<Record<string, _Outcome>>(_STATE_KEY, exec)) ?? {}
  return (names) => {
    let newest: AcmeFailure | null = null
    for (const name of names) {
      const o = all[name]
      if (o && !o.ok && (!newest || o.at > newest.at))
        newest = { name, at: o.at, operation: o.operation, kind: o.kind ?? 'other', cause: o.cause ?? '', error: o.error ?? '' }
    }
    return newest
  }
}
