import { inArray, lt } from 'drizzle-orm'
import { z } from 'zod'
import { panelBanReasons, whitelistEntries } from '../../../db/schema'
import { writeAudit, type AuditContext } from '../core/audit'
import { conflict, upstreamUnavailable } from '../core/errors'
import { getConfig } from '../core/config'
import { getDb, writeTransaction } from '../core/db'
import { redactSecrets } from '../core/redact'
import { getSetting } from '../core/settings'
import { ipOrCidrText, safeText, parseGoDurationMs } from '../core/validate'
import { endOf, formatNet, netContains, parseCidr, type Net } from '../geo/ip'
import { LAN_RANGES } from '../proxy/build/lan-gate'
import { invalidateDecisionCache } from './decisions'
import { banAlert, machineRequest } from './lapi'
import { parseIpOrCidr } from './whitelist'

// A ban made in the panel: one alert with one decision, origin `panel`, posted
// to the local API as the machine. The engine classes it as a custom alert, so
// with the deployment's console file it is never shared upstream (docs/security.md).

export const PANEL_BAN_ORIGIN = 'panel'
export const PANEL_BAN_SCENARIO = 'panel/manual-ban'
const _MIN_MS = 60_000,
  _MAX_MS = 8_760 * 3_600_000

export const banBody = z.strictObject({
  value: ipOrCidrText(),
  duration: z
    .string()
    .max(32)
    .refine((d) => {
      const ms = parseGoDurationMs(d)
      return ms !== null && ms >= _MIN_MS && ms <= _MAX_MS
    }, 'must be a duration from 1m to 8760h, such as 4h or 30m')
    .default('4h'),
  reason: safeText(200).optional(),
  confirm: z
    .boolean()
    .optional()
    .describe(
      'ban even though the target covers your own address, a trusted proxy, a LAN/loopback range or a whitelisted entry; without it such a ban is refused with 409 naming which',
    ),
})

/** The whitelist entry that covers `value` (an address or a range inside it), if any. */
async function _coveringWhitelistEntry(value: string): Promise<string | null> {
  const target = parseCidr(value)
  for (const { value: entry } of await getDb().select({ value: whitelistEntries.value }).from(whitelistEntries)) {
    const net = parseCidr(entry)
    if (netContains(net, target.family, target.start) && netContains(net, target.family, endOf(target))) return entry
  }
  return null
}

// Guard rails: a ban that reaches the operator's own address, a proxy the panel or the
// edge trusts, the LAN/loopback ranges (the LAN gate's) or a whitelisted entry is nearly
// always a mistake that locks someone out (the operator walk banned 127.0.0.1, the
// page's own address and the trusted proxy, without a word). Such a ban needs confirm.

export type BanGuardKind = 'own_address' | 'trusted_proxy' | 'lan' | 'whitelist'
export interface BanGuard {
  kind: BanGuardKind
  /** The address or range of the guard that the target reaches. */
  address: string
  /** One clause for the operator, starting with the target. */
  text: string
}

const _overlaps = (a: Net, b: Net) => a.family === b.family && a.start <= endOf(b) && b.start <= endOf(a)
const _within = (inner: Net, outer: Net) => netContains(outer, inner.family, inner.start) && netContains(outer, inner.family, endOf(inner))

/** "X is Y" / "X contains Y" / "X is inside Y" / "X overlaps Y": how the target meets a guarded net (`same`: its words when equal). */
function _relation(target: Net, targetText: string, other: Net, what: string, same = what): string {
  if (_within(target, other) && _within(other, target)) return `${targetText} is ${same}`
  if (_within(other, target)) return `${targetText} contains ${what}`
  if (_within(target, other)) return `${targetText} is inside ${what}`
  return `${targetText} overlaps ${what}`
}

function _parseOrNull(text: string): Net | null {
  try {
    return parseCidr(text)
  } catch {
    return null
  }
}

/** Every guard rail the target reaches, in the order the message names them. */
export async function banGuards(canonical: string, clientIp: string | null): Promise<BanGuard[]> {
  const target = parseCidr(canonical)
  const out: BanGuard[] = []
  const own = clientIp ? _parseOrNull(clientIp) : null
  if (own && _overlaps(target, own))
    out.push({
      kind: 'own_address',
      address: clientIp!,
      text: `${_relation(target, canonical, own, `${clientIp}, your own address`, 'your own address')}: banning it locks you out of the hosts behind the proxy`,
    })
  const proxies: Array<[string, string]> = [
    ...getConfig().trustedProxies.map((p): [string, string] => [p, 'PANEL_TRUSTED_PROXIES']),
    ...(await getSetting<string[]>('proxy.trusted_proxies')).map((p): [string, string] => [p, 'the setting proxy.trusted_proxies']),
  ]
  for (const [p, where] of proxies) {
    const net = _parseOrNull(p)
    if (net && _overlaps(target, net))
      out.push({
        kind: 'trusted_proxy',
        address: p,
        text: `${_relation(target, canonical, net, `the trusted proxy ${p} (${where})`, `a trusted proxy (${where})`)}: a proxy relays other people's requests, and a ban on it may refuse them all`,
      })
  }
  for (const r of LAN_RANGES) {
    const net = parseCidr(r)
    if (_overlaps(target, net))
      out.push({
        kind: 'lan',
        address: r,
        text: `${_relation(target, canonical, net, `the LAN/loopback range ${r}`)}: the panel, the proxy and your own network use these addresses`,
      })
  }
  // An entry that covers the whole target is refused outright (banSource); one inside it stays exempt from the ban.
  for (const { value: entry } of await getDb().select({ value: whitelistEntries.value }).from(whitelistEntries)) {
    const net = parseCidr(entry)
    if (_overlaps(target, net))
      out.push({
        kind: 'whitelist',
        address: entry,
        text: `${_relation(target, canonical, net, `the whitelisted ${entry}`)}, which the ban will not reach (the whitelist wins)`,
      })
  }
  return out
}

/** The reasons given for the panel's bans of these values (canonical, as the decisions carry them). */
export async function panelBanReasonsFor(values: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  const unique = [...new Set(values)]
  for (let i = 0; i < unique.length; i += 500) {
    const rows = await getDb()
      .select({ value: panelBanReasons.value, reason: panelBanReasons.reason })
      .from(panelBanReasons)
      .where(inArray(panelBanReasons.value, unique.slice(i, i + 500)))
    for (const r of rows) if (r.reason) out.set(r.value, r.reason)
  }
  return out
}

async function _rememberReason(value: string, reason: string, actor: string): Promise<void> {
  const now = new Date()
  const row = { value, reason, createdBy: actor, createdAt: now.toISOString() }
  await writeTransaction(async (tx) => {
    await tx.insert(panelBanReasons).values(row).onConflictDoUpdate({ target: panelBanReasons.value, set: row })
    // No ban outlives the longest duration: older rows name bans that are gone.
    await tx.delete(panelBanReasons).where(lt(panelBanReasons.createdAt, new Date(now.getTime() - _MAX_MS - 86_400_000).toISOString()))
  })
}

export async function banSource(input: z.infer<typeof banBody>, ctx: AuditContext, clientIp: string | null = null) {
  const { value, kind } = parseIpOrCidr(input.value)
  // The whitelist wins over every ban, the panel's too: refuse rather than make a ban that would never apply.
  const entry = await _coveringWhitelistEntry(value)
  if (entry) throw conflict(`value: ${value} is covered by the whitelist entry ${entry}; remove it from the whitelist first`)
  const scope = kind === 'ip' ? 'Ip' : 'Range'
  const canonical = kind === 'ip' ? value : formatNet(parseCidr(value))
  const guards = await banGuards(canonical, clientIp)
  if (guards.length && input.confirm !== true) {
    await writeAudit(ctx, 'decision_ban_refused', { value: canonical, scope, guards: guards.map((g) => `${g.kind} ${g.address}`) })
    throw conflict(`${guards.map((g) => g.text).join('; ')}; send confirm: true to ban anyway`)
  }
  const alert = banAlert({
    scenario: PANEL_BAN_SCENARIO,
    message: `banned in the panel by ${ctx.actor}${input.reason ? `: ${input.reason}` : ''}`,
    origin: PANEL_BAN_ORIGIN,
    scope,
    values: [canonical],
    duration: input.duration,
    source: { scope, value: canonical, ...(kind === 'ip' ? { ip: canonical } : { range: canonical }) },
  })
  const res = await machineRequest('POST', 'v1/alerts', { body: alert })
  if (res.status !== 201)
    throw upstreamUnavailable(
      'security engine',
      await redactSecrets(`the local API refused the ban: ${res.status} ${JSON.stringify(res.json).slice(0, 200)}`),
    )
  await _rememberReason(canonical, input.reason ?? '', ctx.actor)
  await invalidateDecisionCache()
  await writeAudit(ctx, 'decision_ban', {
    value: canonical,
    scope,
    duration: input.duration,
    reason: input.reason ?? '',
    ...(guards.length ? { confirmed_guards: guards.map((g) => `${g.kind} ${g.address}`) } : {}),
  })
  return { value: canonical, scope, type: 'ban', origin: PANEL_BAN_ORIGIN, scenario: PANEL_BAN_SCENARIO, duration: input.duration }
}
