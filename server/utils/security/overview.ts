import { hosts } from '../../../db/schema'
import { getDb } from '../core/db'
import { getConfig, PROXY_MODULE_NAMES } from '../core/config'
import { listCertificateExpiries } from '../hosts/cert-expiry'
import { whitelistEntries } from '../../../db/schema'
import { decisionIdentity } from './decisions'
import { fetchActiveDecisions } from './lapi'
import { parseIpOrCidr } from './whitelist'

export const EXPIRING_SOON_DAYS = 21

/** Per-host protection counts and certificate health, for the security overview. */
export async function readSecurityOverview() {
  const rows = await getDb().select().from(hosts)
  const certs = await listCertificateExpiries()
  const now = Date.now()
  const soon = now + EXPIRING_SOON_DAYS * 86_400_000
  const dated = certs.filter((c) => c.not_after)
  return {
    hosts_total: rows.length,
    waf: {
      enabled: rows.filter((h) => h.wafEnabled).length,
      modes: {
        detection: rows.filter((h) => h.wafEnabled && h.wafMode === 'detection').length,
        blocking: rows.filter((h) => h.wafEnabled && h.wafMode === 'blocking').length,
      },
    },
    rate_limit_enabled: rows.filter((h) => h.rateLimitEnabled).length,
    forward_auth_enabled: rows.filter((h) => h.authRequired).length,
    lan_only: rows.filter((h) => h.lanOnly).length,
    certificates: {
      total: certs.length,
      valid: dated.filter((c) => Date.parse(c.not_after!) > soon).length,
      expiring_soon: dated.filter((c) => Date.parse(c.not_after!) > now && Date.parse(c.not_after!) <= soon).length,
      expired: dated.filter((c) => Date.parse(c.not_after!) <= now).length,
      manual: certs.filter((c) => c.source === 'manual').length,
      acme: certs.filter((c) => c.source === 'acme').length,
    },
    proxy_modules_missing: PROXY_MODULE_NAMES.filter((m) => !getConfig().proxy.modules.includes(m)),
  }
}

function _ipv4ToInt(ip: string): number {
  return ip.split('.').reduce((n, o) => n * 256 + Number(o), 0)
}

/** Whether an address falls in a whitelist entry (IPv4 CIDRs compared numerically, IPv6 exact). */
export function isCoveredBy(ip: string, entry: string): boolean {
  if (!entry.includes('/')) return entry === ip
  const [net, bitsText] = entry.split('/')
  if (!ip.includes('.') || !net!.includes('.')) return false
  const bits = Number(bitsText)
  const mask = bits === 0 ? 0 : 2 ** 32 - 2 ** (32 - bits)
  return (_ipv4ToInt(ip) & mask) >>> 0 === (_ipv4ToInt(net!) & mask) >>> 0
}

/** The caller's own address: is it banned, by what, and is it whitelisted. */
export async function checkSelf(ip: string | null) {
  if (!ip) return { ip: null, banned: false, decisions: [], whitelisted: false, country: null, as_number: null }
  parseIpOrCidr(ip)
  const decisions = await fetchActiveDecisions({ ip })
  const entries = await getDb().select({ value: whitelistEntries.value }).from(whitelistEntries)
  return {
    ip,
    banned: decisions.some((d) => d.type === 'ban'),
    decisions: decisions.map((d) => ({ ...decisionIdentity(d), duration: d.duration })),
    whitelisted: entries.some((e) => isCoveredBy(ip, e.value)),
    country: null,
    as_number: null,
  }
}
