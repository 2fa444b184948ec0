import { isIP } from 'node:net'
import { resolve } from 'node:path'
import { parse as parseDomainName } from 'tldts'

// The only module that reads process.env. Every variable has a default and a
// validator; boot fails listing every problem at once, each with its fix.
// Relative imports only: scripts/db-migrate.mjs loads this file directly.

// wafshare: the project's panel_waf handler (one compiled WAF per distinct directive text, docs/waf.md);
// without it the builder emits coraza-caddy's own `waf` handler, one compiled WAF per host.
// storage: the project's caddy.storage.panel_redis and admin.api.panel_storage (certificates in
// Redis, and the node's answer about its storage; docs/scaling.md).
export const PROXY_MODULE_NAMES = ['crowdsec', 'waf', 'ratelimit', 'dns', 'geo', 'wafshare', 'storage'] as const
export type ProxyModuleName = (typeof PROXY_MODULE_NAMES)[number]

export interface PanelConfig {
  /** HTTP listen port and address of the panel. */
  port: number
  host: string
  /** Database, backups, geolocation files, generated keys. */
  dataDir: string
  /** libSQL URL: file: (embedded) or libsql:// / http(s):// (server). */
  databaseUrl: string
  databaseAuthToken?: string
  /** Master key for secrets at rest; undefined = generate $dataDir/master.key. */
  masterKey?: string
  /** The panel's own host name; the cookie Domain is its parent domain. */
  domain: string
  mode: 'lan' | 'public'
  /** Where browsers reach the panel (ForwardAuth redirects to <publicUrl>/login). */
  publicUrl: string
  /** Where the proxy reaches the panel for ForwardAuth sub-requests. */
  internalUrl: string
  /**
   * Peers (the proxy in front of the panel) whose X-Forwarded-For is believed for
   * the client address of audit rows, sessions and login throttling. Empty: the
   * connection's own address is the client.
   */
  trustedProxies: string[]
  adminEmail?: string
  adminPassword?: string
  /** The caddy binary the Caddyfile import runs `caddy adapt` with (a name on PATH or a path). */
  caddyBin: string
  proxy: {
    adminUrl: string
    modules: ProxyModuleName[]
    logDir: string
    dataDir?: string
    /** PROXY_GEOIP_DIR: the folder of country.mmdb and asn.mmdb as the proxy sees it (docs/access-control.md). */
    geoipDir: string
    /** Addresses the generated config listens on for plain HTTP and for TLS. */
    httpListen: string[]
    httpsListen: string[]
    httpPort: number
    httpsPort: number
    /** PEM file (as the proxy sees it) trusted for the ACME CA's own HTTPS endpoint. */
    acmeTrustedRootsPemFile?: string
    /**
     * Caddy's certificate maintenance interval (tls automation `renew_interval`) in
     * seconds; unset = Caddy's own default (10 min), and nothing is emitted.
     */
    renewIntervalSeconds?: number
  }
  /** Where earlier versions wrote uploaded certificates for the proxy: read only to remove those files at boot. */
  certsDir: string
  /** appsecUrl: the engine's AppSec listener as the proxy reaches it (the bouncer's appsec_url); unset = no AppSec. */
  /**
   * panelBouncerKey: a bouncer key of the panel's own (LAPI_PANEL_BOUNCER_KEY), for its decision
   * mirror and every decision read; unset = reads use bouncerKey, the proxy's (docs/security-engine.md).
   * pullSeconds: the mirror's stream interval.
   */
  lapi: {
    url: string
    machineId?: string
    machinePassword?: string
    bouncerKey?: string
    panelBouncerKey?: string
    pullSeconds: number
    appsecUrl?: string
  }
  crowdsecConfigDir?: string
  /** The engine's hub folder (index + items); default <config dir>/hub. */
  crowdsecHubDir?: string
  /** The engine's data folder (CRS plugin files for appsec tuning). */
  crowdsecDataDir?: string
  /** Period of the drift detector (it re-applies the stored engine files and scenario choices). */
  driftIntervalSeconds: number
  /** Period of the security engine's health probe (and of reading the bans it holds, for when it is unreachable). */
  engineProbeSeconds: number
  /** Period of the country-ban reconciler. */
  countryReconcileSeconds: number
  /** Events waiting for delivery at most; more are dropped and counted. */
  notificationQueueCapacity: number
  geoip: { countryUrl: string; asnUrl: string }
  providerAApiToken?: string
  /**
   * Whether saving a DNS-01 host checks its provider first when the provider has
   * no passed check (PANEL_DNS_AUTO_CHECK, docs/dns-check.md). Off: node 1's
   * proxy is never asked to reach the provider on a save.
   */
  dnsAutoCheck: boolean
  logLevel: 'info' | 'debug'
  /**
   * Tests only: a file holding milliseconds added to the auth clock (OIDC pending
   * states, TOTP steps and pending logins), so that expiry is tested by advancing time.
   */
  testClockOffsetFile?: string
}

type Env = Record<string, string | undefined>

const _DEFAULT_GEOIP_COUNTRY_URL =
  'https://raw.githubusercontent.com/sapics/ip-location-db/main/geolite2-country-mmdb/geolite2-country.mmdb'
const _DEFAULT_GEOIP_ASN_URL = 'https://raw.githubusercontent.com/sapics/ip-location-db/main/asn-mmdb/asn.mmdb'

function _opt(env: Env, name: string): string | undefined {
  const v = env[name]
  return v === undefined || v.trim() === '' ? undefined : v.trim()
}

function _portOf(listen: string): number | undefined {
  const m = /:(\d{1,5})$/.exec(listen)
  return m ? Number(m[1]) : undefined
}

function _isUrl(v: string, protocols: string[]): boolean {
  try {
    return protocols.includes(new URL(v).protocol)
  } catch {
    return false
  }
}

const _IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/

/** The cookie Domain: the parent of the panel's domain, none for localhost or an IP. */
export function cookieDomainFor(panelDomain: string): string | undefined {
  if (panelDomain === 'localhost' || panelDomain.endsWith('.localhost') || _IPV4.test(panelDomain) || panelDomain.includes(':'))
    return undefined
  const labels = panelDomain.split('.')
  return labels.length > 2 ? labels.slice(1).join('.') : panelDomain
}

/**
 * Whether `domain` is listed as a public suffix: a name under which anyone may register their
 * own (com, co.uk, github.io, duckdns.org). The Public Suffix List's private section counts too,
 * as browsers use it: they refuse a cookie for such a domain, and every other site under it
 * would count as the panel's own. A single label the list does not know (`nas`, `lan`) is not one.
 */
export function isPublicSuffix(domain: string): boolean {
  const parsed = parseDomainName(domain, { allowPrivateDomains: true })
  return parsed.publicSuffix === domain && (parsed.isIcann === true || parsed.isPrivate === true)
}

/**
 * The whole numbers of the configuration, declared once: name, default and range. Each is read
 * the same way and refused with the same sentence, so a new period or capacity is one row here.
 */
const _INTEGERS = {
  pullSeconds: { name: 'LAPI_PANEL_PULL_SECONDS', default: 5, min: 1, max: 60 },
  driftIntervalSeconds: { name: 'PANEL_DRIFT_INTERVAL_SECONDS', default: 60, min: 1, max: 3600 },
  engineProbeSeconds: { name: 'PANEL_ENGINE_PROBE_SECONDS', default: 10, min: 1, max: 300 },
  countryReconcileSeconds: { name: 'PANEL_COUNTRY_RECONCILE_SECONDS', default: 300, min: 1, max: 86400 },
  notificationQueueCapacity: { name: 'PANEL_NOTIFICATION_QUEUE_CAPACITY', default: 1000, min: 1, max: 1_000_000 },
} as const

type _IntegerName = keyof typeof _INTEGERS

function _integer(env: Env, errors: string[], key: _IntegerName): number {
  const v = _INTEGERS[key]
  const value = Number(_opt(env, v.name) ?? String(v.default))
  if (!Number.isInteger(value) || value < v.min || value > v.max) errors.push(`${v.name} must be an integer from ${v.min} to ${v.max}`)
  return value
}

/** A comma list of the variable's value (or its default), blanks dropped. */
function _list(env: Env, name: string, fallback: string): string[] {
  return (_opt(env, name) ?? fallback)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
}

/** An http(s) URL without its trailing slashes, refused with the example the operator can copy. */
function _httpUrl(env: Env, errors: string[], name: string, fallback: string, example: string): string {
  const url = (_opt(env, name) ?? fallback).replace(/\/+$/, '')
  if (!_isUrl(url, ['http:', 'https:'])) errors.push(`${name} must be an http(s) URL such as ${example}`)
  return url
}

function _domainProblem(domain: string): string | undefined {
  if (!/^[a-z0-9.-]+$/.test(domain) && !/^[0-9a-f:]+$/.test(domain))
    return `PANEL_DOMAIN must be a host name such as panel.example.com (got "${domain}")`
  const cookieDomain = cookieDomainFor(domain)
  if (cookieDomain === undefined || !isPublicSuffix(cookieDomain)) return undefined
  return (
    `PANEL_DOMAIN "${domain}" would put the session cookie on "${cookieDomain}", a public suffix (anyone can get a name under it, and browsers refuse such a cookie): ` +
    (isPublicSuffix(domain)
      ? 'use a name inside a domain of your own, such as panel.example.com'
      : `use a name one level down, such as panel.${domain}, so that the cookie stays on ${domain}`)
  )
}

/** The panel's own listener, storage, names and URLs. */
function _readPanel(env: Env, errors: string[]) {
  const port = Number(_opt(env, 'PORT') ?? _opt(env, 'NITRO_PORT') ?? '3000')
  if (!Number.isInteger(port) || port < 0 || port > 65535) errors.push('PORT must be an integer from 0 to 65535')
  const host = _opt(env, 'HOST') ?? _opt(env, 'NITRO_HOST') ?? '127.0.0.1'
  const dataDir = resolve(_opt(env, 'PANEL_DATA_DIR') ?? './data')
  const databaseUrl = _opt(env, 'PANEL_DATABASE_URL') ?? `file:${resolve(dataDir, 'panel.db')}`
  if (!/^(file:|libsql:\/\/|https?:\/\/|wss?:\/\/)/.test(databaseUrl))
    errors.push('PANEL_DATABASE_URL must start with file:, libsql://, http:// or https:// (example: file:./data/panel.db)')
  const masterKey = _opt(env, 'PANEL_MASTER_KEY')
  if (masterKey !== undefined && masterKey.length < 32)
    errors.push('PANEL_MASTER_KEY must be at least 32 characters; generate one with: openssl rand -base64 32')
  const domain = (_opt(env, 'PANEL_DOMAIN') ?? 'localhost').toLowerCase()
  const domainProblem = _domainProblem(domain)
  if (domainProblem) errors.push(domainProblem)
  const mode = (_opt(env, 'PANEL_MODE') ?? 'lan').toLowerCase()
  if (mode !== 'lan' && mode !== 'public') errors.push('PANEL_MODE must be "lan" or "public"')
  const publicUrl = (_opt(env, 'PANEL_PUBLIC_URL') ?? `https://${domain}`).replace(/\/+$/, '')
  if (!_isUrl(publicUrl, ['http:', 'https:'])) errors.push('PANEL_PUBLIC_URL must be an http(s) URL such as https://panel.example.com')
  const internalHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host
  const internalUrl = (
    _opt(env, 'PANEL_INTERNAL_URL') ?? `http://${internalHost.includes(':') ? `[${internalHost}]` : internalHost}:${port}`
  ).replace(/\/+$/, '')
  if (Number.isInteger(port) && !_isUrl(internalUrl, ['http:', 'https:']))
    errors.push('PANEL_INTERNAL_URL must be an http(s) URL such as http://panel:3000')
  return { port, host, dataDir, databaseUrl, masterKey, domain, mode: mode as PanelConfig['mode'], publicUrl, internalUrl }
}

function _readTrustedProxies(env: Env, errors: string[]): string[] {
  const trustedProxies = _list(env, 'PANEL_TRUSTED_PROXIES', '')
  for (const t of trustedProxies) {
    const [addr, bits, extra] = t.split('/')
    const family = isIP(addr ?? '')
    if (!family || extra !== undefined || (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128))))
      errors.push(`PANEL_TRUSTED_PROXIES must be a comma list of IP addresses or CIDRs such as 127.0.0.1/32,172.18.0.0/16 (got "${t}")`)
  }
  return trustedProxies
}

function _readAdmin(env: Env, errors: string[]) {
  const adminEmail = _opt(env, 'PANEL_ADMIN_EMAIL')
  const adminPassword = env.PANEL_ADMIN_PASSWORD || undefined
  if ((adminEmail === undefined) !== (adminPassword === undefined))
    errors.push('PANEL_ADMIN_EMAIL and PANEL_ADMIN_PASSWORD must be set together')
  if (adminPassword !== undefined && adminPassword.length < 12) errors.push('PANEL_ADMIN_PASSWORD must be at least 12 characters')
  if (
    adminPassword !== undefined &&
    adminEmail !== undefined &&
    [adminEmail.toLowerCase(), adminEmail.toLowerCase().split('@')[0]].includes(adminPassword.trim().toLowerCase())
  )
    errors.push('PANEL_ADMIN_PASSWORD must not be the email address')
  return { adminEmail, adminPassword }
}

function _readModules(env: Env, errors: string[]): ProxyModuleName[] {
  const modulesRaw = (_opt(env, 'PROXY_MODULES') ?? 'crowdsec,waf,ratelimit,dns,geo,wafshare,storage').toLowerCase()
  const modules: ProxyModuleName[] = []
  if (modulesRaw === 'none') return modules
  for (const m of modulesRaw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if ((PROXY_MODULE_NAMES as readonly string[]).includes(m)) modules.push(m as ProxyModuleName)
    else errors.push(`PROXY_MODULES: unknown module "${m}"; use "none" or a comma list of ${PROXY_MODULE_NAMES.join(', ')}`)
  }
  return modules
}

/** Addresses of one listener; they must share one port (the generated config has one server per scheme). */
function _readListen(env: Env, errors: string[], name: string, fallback: string, example: string) {
  const listen = _list(env, name, fallback)
  const port = _portOf(listen[0] ?? '')
  if (port === undefined || listen.some((l) => _portOf(l) !== port))
    errors.push(`${name} must be a comma list of addresses sharing one port, such as ${example}`)
  return { listen, port }
}

function _readProxy(env: Env, errors: string[], dataDir: string): PanelConfig['proxy'] {
  const adminUrl = _httpUrl(env, errors, 'PROXY_ADMIN_URL', 'http://127.0.0.1:2019', 'http://127.0.0.1:2019')
  const modules = _readModules(env, errors)
  const http = _readListen(env, errors, 'PROXY_HTTP_LISTEN', ':80', ':80 or 127.0.0.1:8080')
  const https = _readListen(env, errors, 'PROXY_HTTPS_LISTEN', ':443', ':443 or 127.0.0.1:8443')
  const renewIntervalRaw = _opt(env, 'PROXY_RENEW_INTERVAL_SECONDS')
  const renewIntervalSeconds = renewIntervalRaw === undefined ? undefined : Number(renewIntervalRaw)
  if (
    renewIntervalSeconds !== undefined &&
    !(Number.isInteger(renewIntervalSeconds) && renewIntervalSeconds >= 1 && renewIntervalSeconds <= 86400)
  )
    errors.push(
      "PROXY_RENEW_INTERVAL_SECONDS must be an integer from 1 to 86400 (how often the proxy checks its certificates for renewal), or unset for Caddy's 600",
    )
  return {
    adminUrl,
    modules,
    logDir: resolve(_opt(env, 'PROXY_LOG_DIR') ?? resolve(dataDir, 'proxy-logs')),
    dataDir: _opt(env, 'PROXY_DATA_DIR'),
    // Where the proxy reads country.mmdb and asn.mmdb: the panel's own geo folder unless the
    // nodes mount it elsewhere (a path every node shares, like the certificate storage).
    geoipDir: resolve(_opt(env, 'PROXY_GEOIP_DIR') ?? resolve(dataDir, 'geoip')),
    httpListen: http.listen,
    httpsListen: https.listen,
    httpPort: http.port ?? 80,
    httpsPort: https.port ?? 443,
    acmeTrustedRootsPemFile: _opt(env, 'PROXY_ACME_TRUSTED_ROOTS'),
    renewIntervalSeconds,
  }
}

function _readLapi(env: Env, errors: string[]): PanelConfig['lapi'] {
  const url = _httpUrl(env, errors, 'LAPI_URL', 'http://127.0.0.1:8080', 'http://127.0.0.1:8080')
  const appsecUrl = _opt(env, 'LAPI_APPSEC_URL')?.replace(/\/+$/, '')
  if (appsecUrl !== undefined && !_isUrl(appsecUrl, ['http:', 'https:']))
    errors.push(
      "LAPI_APPSEC_URL must be an http(s) URL such as http://crowdsec:7422 (the engine's AppSec listener as the proxy reaches it), or unset",
    )
  const panelBouncerKey = _opt(env, 'LAPI_PANEL_BOUNCER_KEY')
  if (panelBouncerKey !== undefined && panelBouncerKey === _opt(env, 'LAPI_BOUNCER_KEY'))
    errors.push(
      "LAPI_PANEL_BOUNCER_KEY must differ from LAPI_BOUNCER_KEY: with the proxy's key the panel's reads would move the proxy bouncer's last pull",
    )
  return {
    url,
    machineId: _opt(env, 'LAPI_MACHINE_ID'),
    machinePassword: env.LAPI_MACHINE_PASSWORD || undefined,
    bouncerKey: _opt(env, 'LAPI_BOUNCER_KEY'),
    panelBouncerKey,
    pullSeconds: _integer(env, errors, 'pullSeconds'),
    appsecUrl,
  }
}

function _readGeoip(env: Env, errors: string[]): PanelConfig['geoip'] {
  const countryUrl = _opt(env, 'GEOIP_COUNTRY_URL') ?? _DEFAULT_GEOIP_COUNTRY_URL
  const asnUrl = _opt(env, 'GEOIP_ASN_URL') ?? _DEFAULT_GEOIP_ASN_URL
  for (const [name, v] of [
    ['GEOIP_COUNTRY_URL', countryUrl],
    ['GEOIP_ASN_URL', asnUrl],
  ] as const)
    if (!_isUrl(v, ['http:', 'https:', 'file:'])) errors.push(`${name} must be an http(s) or file: URL`)
  return { countryUrl, asnUrl }
}

/**
 * Pure: parses an environment into a config plus every problem found. Each section reads its
 * own variables in turn, so the problems come out in the order the variables are documented.
 */
export function parseConfig(env: Env): { config: PanelConfig; errors: string[] } {
  const errors: string[] = []
  const panel = _readPanel(env, errors)
  const trustedProxies = _readTrustedProxies(env, errors)
  const admin = _readAdmin(env, errors)
  const proxy = _readProxy(env, errors, panel.dataDir)
  const lapi = _readLapi(env, errors)
  const geoip = _readGeoip(env, errors)
  const driftIntervalSeconds = _integer(env, errors, 'driftIntervalSeconds')
  const engineProbeSeconds = _integer(env, errors, 'engineProbeSeconds')
  const countryReconcileSeconds = _integer(env, errors, 'countryReconcileSeconds')
  const notificationQueueCapacity = _integer(env, errors, 'notificationQueueCapacity')
  const logLevel = (_opt(env, 'PANEL_LOG_LEVEL') ?? 'info').toLowerCase()
  if (logLevel !== 'info' && logLevel !== 'debug') errors.push('PANEL_LOG_LEVEL must be "info" or "debug"')
  const dnsAutoCheck = (_opt(env, 'PANEL_DNS_AUTO_CHECK') ?? 'on').toLowerCase()
  if (dnsAutoCheck !== 'on' && dnsAutoCheck !== 'off') errors.push('PANEL_DNS_AUTO_CHECK must be "on" or "off"')
  const configDir = _opt(env, 'CROWDSEC_CONFIG_DIR')

  const config: PanelConfig = {
    ...panel,
    databaseAuthToken: _opt(env, 'PANEL_DATABASE_AUTH_TOKEN'),
    trustedProxies,
    ...admin,
    caddyBin: _opt(env, 'PANEL_CADDY_BIN') ?? 'caddy',
    proxy,
    certsDir: resolve(_opt(env, 'PANEL_CERTS_DIR') ?? resolve(panel.dataDir, 'certs')),
    lapi,
    crowdsecConfigDir: configDir,
    crowdsecHubDir: _opt(env, 'CROWDSEC_HUB_DIR') ?? (configDir ? resolve(configDir, 'hub') : undefined),
    crowdsecDataDir: _opt(env, 'CROWDSEC_DATA_DIR'),
    driftIntervalSeconds,
    engineProbeSeconds,
    countryReconcileSeconds,
    notificationQueueCapacity,
    geoip,
    providerAApiToken: _opt(env, 'PROVIDER_A_API_TOKEN'),
    dnsAutoCheck: dnsAutoCheck === 'on',
    logLevel: logLevel as PanelConfig['logLevel'],
    testClockOffsetFile: _opt(env, 'PANEL_TEST_CLOCK_OFFSET_FILE'),
  }
  return { config, errors }
}

let _config: PanelConfig | undefined

/** The validated configuration of this process; throws listing every problem. */
export function getConfig(): PanelConfig {
  if (_config) return _config
  const { config, errors } = parseConfig(process.env)
  if (errors.length) throw new Error(`invalid configuration:\n  - ${errors.join('\n  - ')}`)
  _config = config
  return config
}

/**
 * Nitro's server reads HOST/PORT itself after the plugins ran; without HOST it
 * would listen on every interface. This applies the panel's default (loopback).
 */
export function applyListenDefaults(config: PanelConfig): void {
  if (!process.env.NITRO_HOST && !process.env.HOST) process.env.HOST = config.host
}
