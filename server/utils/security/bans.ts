import { z } from 'zod'
import { whitelistEntries } from '../../../db/schema'
import { writeAudit, type AuditContext } from '../core/audit'
import { conflict, upstreamUnavailable } from '../core/errors'
import { getDb } from '../core/db'
import { redactSecrets } from '../core/redact'
import { ipOrCidrText, safeText, parseGoDurationMs } from '../core/validate'
import { endOf, formatNet, netContains, parseCidr } from '../geo/ip'
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

export async function banSource(input: z.infer<typeof banBody>, ctx: AuditContext) {
  const { value, kind } = parseIpOrCidr(input.value)
  // The whitelist wins over every ban, the panel's too: refuse rather than make a ban that would never apply.
  const entry = await _coveringWhitelistEntry(value)
  if (entry) throw conflict(`value: ${value} is covered by the whitelist entry ${entry}; remove it from the whitelist first`)
  const scope = kind === 'ip' ? 'Ip' : 'Range'
  const canonical = kind === 'ip' ? value : formatNet(parseCidr(value))
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
  await invalidateDecisionCache()
  await writeAudit(ctx, 'decision_ban', { value: canonical, scope, duration: input.duration, reason: input.reason ?? '' })
  return { value: canonical, scope, type: 'ban', origin: PANEL_BAN_ORIGIN, scenario: PANEL_BAN_SCENARIO, duration: input.duration }
}
