import { isIP } from 'node:net'
import { resolve } from 'node:path'
import { parse as parseDomainName } from 'tldts'

// The only module that reads process.env. Every variable has a default and a
// validator; boot fails listing every problem at once, each with its fix.
// Relative imports only: scripts/db-migrate.mjs loads this file directly.

export const PROXY_MODULE_NAMES = ['crowdsec', 'waf', 'ratelimit', 'dns'] as const
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
    /** Addresses the generated config listens on for plain HTTP and for TLS. */
    httpListen: string[]
    httpsListen: string[]
    httpPort: number
    httpsPort: number
    /** PEM file (as the proxy sees it) trusted for the ACME CA's own HTTPS endpoint. */
    acmeTrustedRootsPemFile?: string
    /** PANEL_CERTS_DIR as the proxy sees it (the same folder on a shared volume). */
    certsDir: string
    /**
     * Caddy's certificate maintenance interval (tls automation `renew_interval`) in
     * seconds; unset = Caddy's own default (10 min), and nothing is emitted.
     */
    renewIntervalSeconds?: number
  }
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

/** Pure: parses an environment into a config plus every problem found. */
export function parseConfig(env: Env): { config: PanelConfig; errors: string[] } {
  const errors: string[] = []
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
  if (!/^[a-z0-9.-]+$/.test(domain) && !/^[0-9a-f:]+$/.test(domain))
    errors.push(`PANEL_DOMAIN must be a host name such as panel.example.com (got "${domain}")`)
  else {
    const cookieDomain = cookieDomainFor(domain)
    if (cookieDomain !== undefined && isPublicSuffix(cookieDomain))
      errors.push(
        `PANEL_DOMAIN "${domain}" would put the session cookie on "${cookieDomain}", a public suffix (anyone can get a name under it, and browsers refuse such a cookie): ` +
          (isPublicSuffix(domain)
            ? 'use a name inside a domain of your own, such as panel.example.com'
            : `use a name one level down, such as panel.${domain}, so that the cookie stays on ${domain}`),
      )
  }
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
  const trustedProxies = (_opt(env, 'PANEL_TRUSTED_PROXIES') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  for (const t of trustedProxies) {
    const [addr, bits, extra] = t.split('/')
    const family = isIP(addr ?? '')
    if (!family || extra !== undefined || (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128))))
      errors.push(`PANEL_TRUSTED_PROXIES must be a comma list of IP addresses or CIDRs such as 127.0.0.1/32,172.18.0.0/16 (got "${t}")`)
  }
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

  const proxyAdminUrl = (_opt(env, 'PROXY_ADMIN_URL') ?? 'http://127.0.0.1:2019').replace(/\/+$/, '')
  if (!_isUrl(proxyAdminUrl, ['http:', 'https:'])) errors.push('PROXY_ADMIN_URL must be an http(s) URL such as http://127.0.0.1:2019')
  const modulesRaw = (_opt(env, 'PROXY_MODULES') ?? 'crowdsec,waf,ratelimit,dns').toLowerCase()
  const modules: ProxyModuleName[] = []
  if (modulesRaw !== 'none') {
    for (const m of modulesRaw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      if ((PROXY_MODULE_NAMES as readonly string[]).includes(m)) modules.push(m as ProxyModuleName)
      else errors.push(`PROXY_MODULES: unknown module "${m}"; use "none" or a comma list of ${PROXY_MODULE_NAMES.join(', ')}`)
    }
  }
  const httpListen = (_opt(env, 'PROXY_HTTP_LISTEN') ?? ':80')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  const httpsListen = (_opt(env, 'PROXY_HTTPS_LISTEN') ?? ':443')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  const httpPort = _portOf(httpListen[0] ?? '')
  const httpsPort = _portOf(httpsListen[0] ?? '')
  if (httpPort === undefined || httpListen.some((l) => _portOf(l) !== httpPort))
    errors.push('PROXY_HTTP_LISTEN must be a comma list of addresses sharing one port, such as :80 or 127.0.0.1:8080')
  if (httpsPort === undefined || httpsListen.some((l) => _portOf(l) !== httpsPort))
    errors.push('PROXY_HTTPS_LISTEN must be a comma list of addresses sharing one port, such as :443 or 127.0.0.1:8443')

  const renewIntervalRaw = _opt(env, 'PROXY_RENEW_INTERVAL_SECONDS')
  const renewIntervalSeconds = renewIntervalRaw === undefined ? undefined : Number(renewIntervalRaw)
  if (
    renewIntervalSeconds !== undefined &&
    !(Number.isInteger(renewIntervalSeconds) && renewIntervalSeconds >= 1 && renewIntervalSeconds <= 86400)
  )
    errors.push(
      "PROXY_RENEW_INTERVAL_SECONDS must be an integer from 1 to 86400 (how often the proxy checks its certificates for renewal), or unset for Caddy's 600",
    )

  const lapiUrl = (_opt(env, 'LAPI_URL') ?? 'http://127.0.0.1:8080').replace(/\/+$/, '')
  if (!_isUrl(lapiUrl, ['http:', 'https:'])) errors.push('LAPI_URL must be an http(s) URL such as http://127.0.0.1:8080')
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
  const pullSeconds = Number(_opt(env, 'LAPI_PANEL_PULL_SECONDS') ?? '5')
  if (!Number.isInteger(pullSeconds) || pullSeconds < 1 || pullSeconds > 60)
    errors.push('LAPI_PANEL_PULL_SECONDS must be an integer from 1 to 60')
  const geoCountry = _opt(env, 'GEOIP_COUNTRY_URL') ?? _DEFAULT_GEOIP_COUNTRY_URL
  const geoAsn = _opt(env, 'GEOIP_ASN_URL') ?? _DEFAULT_GEOIP_ASN_URL
  for (const [name, v] of [
    ['GEOIP_COUNTRY_URL', geoCountry],
    ['GEOIP_ASN_URL', geoAsn],
  ] as const)
    if (!_isUrl(v, ['http:', 'https:', 'file:'])) errors.push(`${name} must be an http(s) or file: URL`)
  const driftIntervalSeconds = Number(_opt(env, 'PANEL_DRIFT_INTERVAL_SECONDS') ?? '60')
  if (!Number.isInteger(driftIntervalSeconds) || driftIntervalSeconds < 1 || driftIntervalSeconds > 3600)
    errors.push('PANEL_DRIFT_INTERVAL_SECONDS must be an integer from 1 to 3600')
  const engineProbeSeconds = Number(_opt(env, 'PANEL_ENGINE_PROBE_SECONDS') ?? '10')
  if (!Number.isInteger(engineProbeSeconds) || engineProbeSeconds < 1 || engineProbeSeconds > 300)
    errors.push('PANEL_ENGINE_PROBE_SECONDS must be an integer from 1 to 300')
  const countryReconcileSeconds = Number(_opt(env, 'PANEL_COUNTRY_RECONCILE_SECONDS') ?? '300')
  if (!Number.isInteger(countryReconcileSeconds) || countryReconcileSeconds < 1 || countryReconcileSeconds > 86400)
    errors.push('PANEL_COUNTRY_RECONCILE_SECONDS must be an integer from 1 to 86400')
  const notificationQueueCapacity = Number(_opt(env, 'PANEL_NOTIFICATION_QUEUE_CAPACITY') ?? '1000')
  if (!Number.isInteger(notificationQueueCapacity) || notificationQueueCapacity < 1 || notificationQueueCapacity > 1_000_000)
    errors.push('PANEL_NOTIFICATION_QUEUE_CAPACITY must be an integer from 1 to 1000000')
  const logLevel = (_opt(env, 'PANEL_LOG_LEVEL') ?? 'info').toLowerCase()
  if (logLevel !== 'info' && logLevel !== 'debug') errors.push('PANEL_LOG_LEVEL must be "info" or "debug"')

  const config: PanelConfig = {
    port,
    host,
    dataDir,
    databaseUrl,
    databaseAuthToken: _opt(env, 'PANEL_DATABASE_AUTH_TOKEN'),
    masterKey,
    domain,
    mode: mode as PanelConfig['mode'],
    publicUrl,
    internalUrl,
    trustedProxies,
    adminEmail,
    adminPassword,
    caddyBin: _opt(env, 'PANEL_CADDY_BIN') ?? 'caddy',
    proxy: {
      adminUrl: proxyAdminUrl,
      modules,
      logDir: resolve(_opt(env, 'PROXY_LOG_DIR') ?? resolve(dataDir, 'proxy-logs')),
      dataDir: _opt(env, 'PROXY_DATA_DIR'),
      httpListen,
      httpsListen,
      httpPort: httpPort ?? 80,
      httpsPort: httpsPort ?? 443,
      acmeTrustedRootsPemFile: _opt(env, 'PROXY_ACME_TRUSTED_ROOTS'),
      certsDir: _opt(env, 'PROXY_CERTS_DIR') ?? resolve(_opt(env, 'PANEL_CERTS_DIR') ?? resolve(dataDir, 'certs')),
      renewIntervalSeconds,
    },
    certsDir: resolve(_opt(env, 'PANEL_CERTS_DIR') ?? resolve(dataDir, 'certs')),
    lapi: {
      url: lapiUrl,
      machineId: _opt(env, 'LAPI_MACHINE_ID'),
      machinePassword: env.LAPI_MACHINE_PASSWORD || undefined,
      bouncerKey: _opt(env, 'LAPI_BOUNCER_KEY'),
      panelBouncerKey,
      pullSeconds,
      appsecUrl,
    },
    crowdsecConfigDir: _opt(env, 'CROWDSEC_CONFIG_DIR'),
    crowdsecHubDir:
      _opt(env, 'CROWDSEC_HUB_DIR') ?? (_opt(env, 'CROWDSEC_CONFIG_DIR') ? resolve(_opt(env, 'CROWDSEC_CONFIG_DIR')!, 'hub') : undefined),
    crowdsecDataDir: _opt(env, 'CROWDSEC_DATA_DIR'),
    driftIntervalSeconds,
    engineProbeSeconds,
    countryReconcileSeconds,
    notificationQueueCapacity,
    geoip: { countryUrl: geoCountry, asnUrl: geoAsn },
    providerAApiToken: _opt(env, 'PROVIDER_A_API_TOKEN'),
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
