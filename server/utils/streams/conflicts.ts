import { eq } from 'drizzle-orm'
import { hostNames, hosts, streams } from '../../../db/schema'
import type { Executor } from '../core/db'
import type { Stream } from './schemas'

// Who holds a port or a name, for the cross-row checks of streams (docs/streams.md,
// "Conflicts"): the proxy's own listeners, the other streams, the web hosts. The
// rules are pure functions so that the API, the host checks and the tests read them
// the same way; the two queries at the end are the only reads.

/** The ports the proxy itself listens on, whatever the streams say (server/utils/core/config.ts). */
export interface ProxyPorts {
  httpPort: number
  httpsPort: number
  adminPort: number
}

/** The admin API's port from PROXY_ADMIN_URL (http://127.0.0.1:2019): explicit, or the scheme's default. */
export function proxyPortsOf(proxy: { httpPort: number; httpsPort: number; adminUrl: string }): ProxyPorts {
  const admin = new URL(proxy.adminUrl)
  return {
    httpPort: proxy.httpPort,
    httpsPort: proxy.httpsPort,
    adminPort: Number(admin.port || (admin.protocol === 'https:' ? 443 : 80)),
  }
}

type _Ports = Pick<Stream, 'protocol' | 'listen_port' | 'listen_port_end'>

const _first = (s: _Ports) => s.listen_port
const _last = (s: _Ports) => s.listen_port_end ?? s.listen_port

/** "25565/tcp", "27000-27010/udp": how the API and the messages write a stream's ports. */
export function portsText(s: _Ports): string {
  return `${s.listen_port_end == null ? s.listen_port : `${s.listen_port}-${s.listen_port_end}`}/${s.protocol}`
}

const _holds = (s: _Ports, port: number) => _first(s) <= port && port <= _last(s)
const _portWords = (s: _Ports) => (s.listen_port_end == null ? `port ${s.listen_port}` : `the range ${s.listen_port}-${s.listen_port_end}`)

/** What the deployment must publish for the stream; an SNI stream on the HTTPS port needs nothing new. */
export function portsToPublish(s: Pick<Stream, 'protocol' | 'listen_port' | 'listen_port_end' | 'tls_sni'>, ports: ProxyPorts): string {
  const text = portsText(s)
  return s.protocol === 'tcp' && s.tls_sni.length && s.listen_port === ports.httpsPort
    ? `${text} (already published for the web hosts)`
    : text
}

/**
 * A port of the proxy's own listeners inside the stream's ports, as a 409 message; null when none.
 * The HTTPS port is shared only by SNI routing (a TCP stream with tls_sni names): the TLS ClientHello
 * then says whether a connection is the stream's or the web hosts'. UDP is refused there too, since
 * the web hosts' HTTP/3 answers on it.
 */
export function proxyPortConflict(s: _Ports & Pick<Stream, 'tls_sni'>, ports: ProxyPorts): string | null {
  const where = _portWords(s)
  const inRange = (p: number) => (s.listen_port_end == null ? `port ${p}` : `${where} includes port ${p}, which`)
  if (_holds(s, ports.adminPort))
    return `listen_port: ${inRange(ports.adminPort)} is the proxy's admin API (PROXY_ADMIN_URL); pick another port`
  if (_holds(s, ports.httpPort))
    return `listen_port: ${inRange(ports.httpPort)} is the proxy's HTTP port, where the web hosts answer; pick another port`
  if (_holds(s, ports.httpsPort) && !(s.protocol === 'tcp' && s.tls_sni.length && s.listen_port_end == null))
    return `listen_port: ${inRange(ports.httpsPort)} is the proxy's HTTPS port, where the web hosts answer; only a TCP stream with tls_sni names can share it (routed by the TLS server name)`
  return null
}

/**
 * Whether one TLS server name can match both patterns: equal, or a wildcard covering the other.
 * A wildcard covers exactly one label (as the proxy matches it): `*.a.com` covers `x.a.com`, not
 * `y.x.a.com`, and two different wildcards never match the same name.
 */
export function sniNamesOverlap(a: string, b: string): boolean {
  return a === b || _covers(a, b) || _covers(b, a)
}

function _covers(wildcard: string, name: string): boolean {
  if (!wildcard.startsWith('*.') || name.startsWith('*.')) return false
  const suffix = wildcard.slice(1)
  return name.endsWith(suffix) && name.length > suffix.length && !name.slice(0, -suffix.length).includes('.')
}

const _streamWords = (s: Pick<Stream, 'id' | 'name'> & _Ports) => `stream ${s.id} ("${s.name}", ${portsText(s)})`

/**
 * Why `candidate` cannot sit beside `other`, as a 409 message; null when both fit. Streams of
 * different protocols never collide (a TCP and a UDP listener share a number); two TCP streams
 * share a port only when both route by SNI and no name could match both.
 */
export function streamConflict(candidate: _Ports & Pick<Stream, 'tls_sni'>, other: Stream): string | null {
  if (candidate.protocol !== other.protocol) return null
  if (_last(candidate) < _first(other) || _last(other) < _first(candidate)) return null
  if (candidate.tls_sni.length && other.tls_sni.length) {
    for (const mine of candidate.tls_sni) {
      const theirs = other.tls_sni.find((n) => sniNamesOverlap(mine, n))
      if (theirs)
        return `tls_sni: ${mine === theirs ? `"${mine}" is` : `"${mine}" overlaps "${theirs}", which is`} already routed by ${_streamWords(other)} on the same port; a TLS server name goes to one stream`
    }
    return null
  }
  const shared = Math.max(_first(candidate), _first(other))
  const sni = candidate.protocol === 'tcp' ? '; two TCP streams share a port only when both route by tls_sni with no name in common' : ''
  return `listen_port: ${candidate.listen_port_end == null ? `port ${shared}` : `${_portWords(candidate)} includes port ${shared}, which`} is already used by ${_streamWords(other)}${sni}`
}

/** A web host's name that an SNI name would take from it: equal, or one of the two a wildcard covering the other. */
export interface SniHostClash {
  sni: string
  hostName: string
  hostId: number
  hostDomain: string
}

/** The first web host name that one of `sniNames` overlaps, or null (disabled hosts count: enabling one must not collide). */
export async function webHostClash(exec: Executor, sniNames: string[]): Promise<SniHostClash | null> {
  if (!sniNames.length) return null
  // Every name is read: a wildcard on either side cannot be looked up by equality, and a panel holds thousands at most.
  const names = await exec
    .select({ name: hostNames.name, hostId: hostNames.hostId, domain: hosts.domain })
    .from(hostNames)
    .innerJoin(hosts, eq(hosts.id, hostNames.hostId))
    .orderBy(hostNames.hostId, hostNames.name)
  for (const sni of sniNames) {
    const hit = names.find((n) => sniNamesOverlap(sni, n.name))
    if (hit) return { sni, hostName: hit.name, hostId: hit.hostId, hostDomain: hit.domain }
  }
  return null
}

/** 409 message for a stream's SNI name that a web host holds. */
export function webHostClashMessage(c: SniHostClash): string {
  const how = c.sni === c.hostName ? `"${c.sni}" is` : `"${c.sni}" overlaps "${c.hostName}", which is`
  return `tls_sni: ${how} a name of web host ${c.hostId} (${c.hostDomain}); a name is routed to a web host or to a stream, not both`
}

/**
 * The first stream whose SNI names overlap one of a web host's `names`, as a 409 message naming the
 * stream, or null. The host checks call it (hosts/hosts.ts), so that a host cannot take a stream's name.
 */
export async function streamSniClash(exec: Executor, names: string[], field = 'domain'): Promise<string | null> {
  const rows = await exec.select().from(streams).orderBy(streams.id)
  for (const row of rows) {
    for (const name of names) {
      const sni = row.tlsSni.find((n) => sniNamesOverlap(name, n))
      if (sni) {
        const how = sni === name ? `"${name}" is` : `"${name}" overlaps "${sni}", which is`
        return `${field}: ${how} routed by TLS server name to stream ${row.id} ("${row.name}", ${portsText({ protocol: row.protocol, listen_port: row.listenPort, listen_port_end: row.listenPortEnd })}); a name is routed to a web host or to a stream, not both`
      }
    }
  }
  return null
}
