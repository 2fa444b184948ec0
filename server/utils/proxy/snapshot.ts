import { whitelistEntries } from '../../../db/schema'
import { getConfig } from '../core/config'
import type { Executor } from '../core/db'
import { getSetting } from '../core/settings'
import { readAccessLists, readHosts, readRules, readTargetGroups, readWafExclusions } from '../hosts/records'
import { readDnsProviderCredentials } from '../hosts/dns-credentials'
import { readManualCertPems } from '../hosts/manual-cert-pems'
import { readStreams } from '../streams/records'
import { cookieDomainFor } from '../auth/cookie'
import type { ProxySnapshot, UnknownHostAnswer } from './build/types'
import type { ProxyStorage } from './storage/schemas'
import type { StorageSnapshot } from './storage/storage-config'

// Everything the proxy configuration depends on, read in this one place, inside
// the caller's transaction when there is one (so a pending change is pushed
// before commit). A new input is one more field here and in ProxySnapshot.

/** The address the proxy dials for ForwardAuth sub-requests, from PANEL_INTERNAL_URL. */
export function panelUpstreamOf(internalUrl: string): ProxySnapshot['panelUpstream'] {
  const internal = new URL(internalUrl)
  const host = internal.hostname.includes(':') ? `[${internal.hostname}]` : internal.hostname
  return { dial: `${host}:${internal.port || (internal.protocol === 'https:' ? 443 : 80)}`, tls: internal.protocol === 'https:' }
}

function _panelCookieScope(panelDomain: string): ProxySnapshot['panelCookie'] {
  const domain = cookieDomainFor(panelDomain)
  return domain ? { domain: domain.toLowerCase(), panelHost: panelDomain.toLowerCase() } : null
}

/** The storage settings; the secrets are read (decrypted) only when the storage is Redis. */
async function _storage(exec: Executor): Promise<StorageSnapshot> {
  const storage = await getSetting<ProxyStorage>('proxy.storage', exec)
  if (storage.module !== 'redis') return { storage, redisPassword: '', sentinelPassword: '', encryptionKey: '' }
  return {
    storage,
    redisPassword: await getSetting<string>('proxy.storage.redis_password', exec),
    sentinelPassword: await getSetting<string>('proxy.storage.sentinel_password', exec),
    encryptionKey: await getSetting<string>('proxy.storage.encryption_key', exec),
  }
}

export async function readProxySnapshot(exec: Executor): Promise<ProxySnapshot> {
  const cfg = getConfig()
  const [hosts, targetGroups, rules, wafExclusions, accessLists, dnsProviders, manualCerts, streams] = await Promise.all([
    readHosts(exec),
    readTargetGroups(exec),
    readRules(exec),
    readWafExclusions(exec),
    readAccessLists(exec),
    readDnsProviderCredentials(exec),
    readManualCertPems(exec),
    readStreams(exec),
  ])
  return {
    adminListen: new URL(cfg.proxy.adminUrl).host,
    storageRoot: cfg.proxy.dataDir ?? null,
    storage: await _storage(exec),
    renewIntervalSeconds: cfg.proxy.renewIntervalSeconds ?? null,
    logDir: cfg.proxy.logDir,
    geoipDir: cfg.proxy.geoipDir,
    modules: cfg.proxy.modules,
    httpListen: cfg.proxy.httpListen,
    httpsListen: cfg.proxy.httpsListen,
    httpPort: cfg.proxy.httpPort,
    httpsPort: cfg.proxy.httpsPort,
    panelUpstream: panelUpstreamOf(cfg.internalUrl),
    panelCookie: _panelCookieScope(cfg.domain),
    strictSessions: await getSetting<boolean>('auth.strict_sessions', exec),
    acme: {
      email: (await getSetting<string>('acme.email', exec)) || null,
      caUrl: (await getSetting<string>('acme.ca_url', exec)) || null,
      trustedRootsPemFile: cfg.proxy.acmeTrustedRootsPemFile ?? null,
    },
    security: {
      lapiUrl: cfg.lapi.url,
      bouncerKey: cfg.lapi.bouncerKey ?? null,
      tickerInterval: await getSetting<string>('security_engine.ticker_interval', exec),
      appsecUrl: cfg.lapi.appsecUrl ?? null,
    },
    waf: {
      inboundThreshold: await getSetting<number>('appsec.inbound_threshold', exec),
      outboundThreshold: await getSetting<number>('appsec.outbound_threshold', exec),
    },
    whitelist: (await exec.select({ value: whitelistEntries.value }).from(whitelistEntries)).map((r) => r.value).sort(),
    clientIp: {
      trustedProxies: await getSetting<string[]>('proxy.trusted_proxies', exec),
      headers: await getSetting<string[]>('proxy.client_ip_headers', exec),
    },
    compression: {
      enabled: await getSetting<boolean>('proxy.compression', exec),
      types: await getSetting<string[]>('proxy.compression_types', exec),
      minimumBytes: await getSetting<number>('proxy.compression_minimum_bytes', exec),
    },
    errorPages: await getSetting<boolean>('proxy.error_pages', exec),
    errorPageMessage: await getSetting<string>('proxy.error_page_message', exec),
    unknownHostAnswer: await getSetting<UnknownHostAnswer>('proxy.unknown_host_answer', exec),
    dnsProviders,
    manualCerts,
    hosts,
    targetGroups,
    rules,
    wafExclusions,
    accessLists,
    streams,
  }
}
