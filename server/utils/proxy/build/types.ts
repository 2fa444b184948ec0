import type { ProxyModuleName } from '../../core/config'
import type { CompressionSettings } from './encode'
import type { DnsProviderCredentials } from '../../hosts/dns-credentials'
import type { ManualCertPem } from '../../hosts/manual-cert-pems'
import type { AccessListRecord } from '../../hosts/records'
import type { Host, Rule, TargetGroup, WafExclusion } from '../../hosts/schemas'
import type { Stream } from '../../streams/schemas'
import type { StorageSnapshot } from '../storage/storage-config'

// The plain-data snapshot the builder turns into Caddy JSON. The reconciler
// reads it from the database (secrets already decrypted); the builder never does I/O.

// The hosts' shapes are declared once, as zod records (hosts/schemas.ts).
export type HostSnapshot = Host
export type TargetGroupSnapshot = TargetGroup
export type RuleSnapshot = Rule
export type StreamSnapshot = Stream
/** A WAF rule turned off for one host: everywhere, under a path, or for one argument. */
export type WafExclusionSnapshot = Pick<WafExclusion, 'id' | 'host_id' | 'rule_id' | 'path' | 'argument'>

/** An access list as the builder needs it (hosts/records.ts reads it). */
export type AccessListSnapshot = AccessListRecord

export interface ProxySnapshot {
  adminListen: string
  storageRoot: string | null
  /**
   * Settings proxy.storage and its secrets (decrypted here only): redis gives every node the
   * panel_redis storage instead of the folder at storageRoot. Absent or file_system: the folder.
   */
  storage?: StorageSnapshot | null
  /** PROXY_RENEW_INTERVAL_SECONDS: Caddy's certificate maintenance interval; null = Caddy's default, not emitted. */
  renewIntervalSeconds: number | null
  logDir: string
  /**
   * The folder of country.mmdb and asn.mmdb as the proxy sees it (PROXY_GEOIP_DIR, default the
   * panel's geo folder): the geo matchers of hosts and rules read them there. Absent (hand-built test snapshots): /geoip.
   */
  geoipDir?: string
  modules: ProxyModuleName[]
  httpListen: string[]
  httpsListen: string[]
  httpPort: number
  httpsPort: number
  panelUpstream: { dial: string; tls: boolean }
  /**
   * The panel's session cookie when browsers send it beyond the panel's own host (its
   * Domain is the parent of PANEL_DOMAIN, for ForwardAuth): every other host under that
   * domain takes it out of the request, so no upstream ever holds the operator's session.
   * Absent: a host-only cookie, nothing to take out.
   */
  panelCookie?: { domain: string; panelHost: string } | null
  /**
   * Setting auth.strict_sessions (docs/auth.md): every ForwardAuth host routes the reserved
   * callback path to the panel, where the browser trades a one-time code for the host's credential.
   */
  strictSessions?: boolean
  acme: { email: string | null; caUrl: string | null; trustedRootsPemFile: string | null }
  security: { lapiUrl: string; bouncerKey: string | null; tickerInterval: string; appsecUrl: string | null }
  waf: { inboundThreshold: number; outboundThreshold: number }
  /** The operator's whitelist (IPs and CIDRs): the bouncer never judges these sources. */
  whitelist: string[]
  /** Proxies in front of Caddy whose client-address headers are believed (empty: none). */
  clientIp: { trustedProxies: string[]; headers: string[] }
  dnsProviders: DnsProviderCredentials
  manualCerts: ManualCertPem[]
  hosts: HostSnapshot[]
  targetGroups: TargetGroupSnapshot[]
  rules: RuleSnapshot[]
  /**
   * Set by the reconciler just before a push (not read from the database): the
   * sources the engine bans now, refused until `untilMs` while the new bouncer
   * loads its decisions (see buildBouncerWarmupRoute).
   */
  bouncerWarmup?: { untilMs: number; sources: string[] } | null
  /**
   * Set while the security engine is unreachable: the sources it had banned when
   * the panel last read them (the bouncer restarts empty on every push, so they
   * are refused by the configuration itself), and hosts with engine_down_refuse answer 503.
   */
  engineDown?: { knownBanned: string[] } | null
  wafExclusions: WafExclusionSnapshot[]
  /** Absent (in hand-built test snapshots) means none. */
  accessLists?: AccessListSnapshot[]
  /** TCP/UDP streams (docs/streams.md), enabled or not. Absent (in hand-built test snapshots) means none. */
  streams?: StreamSnapshot[]
  /** Settings proxy.compression*: what a host with compression 'inherit' does. Absent: off. */
  compression?: CompressionSettings | null
  /** Setting proxy.error_pages: whether a host with error_pages 'inherit' answers pages of our own. Absent: off. */
  errorPages?: boolean
  /** Setting proxy.error_page_message: the pages' message for a host without its own ('' or absent: none). */
  errorPageMessage?: string
  /** Setting proxy.unknown_host_answer: what a request for a name no host has gets. Absent: '404'. */
  unknownHostAnswer?: UnknownHostAnswer
}

/** '404': 404 on plain HTTP, 421 on HTTPS (the answer before the setting); '421': 421 on both; 'close': no answer. */
export type UnknownHostAnswer = '404' | '421' | 'close'

export type Json = Record<string, unknown>
export type Route = Json
