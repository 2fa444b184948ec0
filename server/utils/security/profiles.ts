import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { hosts } from '../../../db/schema'
import { getDb } from '../core/db'
import { getConfig } from '../core/config'
import { logger } from '../core/log'
import { cleanCheck, readFileOrNull, yamlString, type SurfaceCheck } from './engine-files'
import { writeFileAtomically } from '../core/files'

// true_detect_mode: a profile placed before the engine's default profiles that
// matches WAF (AppSec) alerts for the host and stops evaluation with no
// decision. The host keys are the ones the hub parsers set (proxy-and-engine.md
// B6): `target_host` for AppSec, `target_fqdn` for access-log scenarios.

/** The scenario of deploy/crowdsec/scenarios/panel-coraza-waf-blocks.yaml. */
export const WAF_AUDIT_SCENARIO = 'panel/coraza-waf-blocks'

const _BEGIN = '# BEGIN panel-managed profiles (true_detect_mode): edits here are overwritten'
const _END = '# END panel-managed profiles'

function _hostCondition(name: string): string {
  const n = yamlString(name)
  return `.GetMeta("target_host") == ${n} || .GetMeta("target_fqdn") == ${n} || .GetMeta("target_fqdn") startsWith ${yamlString(`${name}:`)}`
}

export function renderTrueDetectProfiles(hostsWithNames: Array<{ id: number; names: string[] }>): string {
  if (!hostsWithNames.length) return ''
  const docs = hostsWithNames.map((h) => {
    const any = h.names.map(_hostCondition).join(' || ')
    // WAF scenarios: the engine's AppSec ones, and deploy/'s panel/coraza-waf-blocks (the proxy WAF's audit log).
    const filter = `Alert.Remediation == true && (Alert.GetScenario() startsWith "crowdsecurity/appsec" || Alert.GetScenario() == "crowdsecurity/crowdsec-appsec-outofband" || Alert.GetScenario() == "${WAF_AUDIT_SCENARIO}") && any(Alert.Events, {${any}})`
    // No `on_error`: CrowdSec 1.4 refuses the key (newer engines accept it). The
    // filter only calls nil-safe accessors (GetMeta answers "" for a missing key).
    return [`name: panel_true_detect_host_${h.id}`, 'filters:', `  - ${JSON.stringify(filter)}`, 'on_success: break'].join('\n')
  })
  return `${_BEGIN}\n${docs.join('\n---\n')}\n---\n${_END}\n`
}

const _PANEL_DOC = /^name:\s*["']?panel_true_detect_host_\d+/m

/**
 * The file's own content with the panel's block (if any) taken out. When a hand
 * edit removed a marker, the marker left and every document the panel names
 * (panel_true_detect_host_<id>) are taken out instead; the rest stays as it was.
 */
export function stripPanelBlock(text: string): string {
  const start = text.indexOf(_BEGIN)
  const end = text.indexOf(_END)
  if (start >= 0 && end > start) return text.slice(0, start) + text.slice(end + _END.length).replace(/^\n/, '')
  if (start < 0 && end < 0 && !_PANEL_DOC.test(text)) return text
  const withoutMarkers = text
    .split('\n')
    .filter((l) => l !== _BEGIN && l !== _END)
    .join('\n')
  const kept = withoutMarkers.split(/^---[ \t]*$/m).filter((doc) => !_PANEL_DOC.test(doc) && doc.trim() !== '')
  return kept.join('---').replace(/^\n+/, '')
}

/** The file the panel's block should leave, or null when profiles.yaml is missing. */
async function _expected(path: string): Promise<{ current: string | null; next: string | null; hosts: number }> {
  const rows = await getDb().select().from(hosts).where(eq(hosts.trueDetectMode, true)).orderBy(hosts.id)
  const block = renderTrueDetectProfiles(rows.map((h) => ({ id: h.id, names: [h.domain, ...h.aliases] })))
  const current = readFileOrNull(path)
  return { current, next: current === null ? null : block + stripPanelBlock(current), hosts: rows.length }
}

function _profilesPath(): string | undefined {
  const dir = getConfig().crowdsecConfigDir
  return dir ? join(dir, 'profiles.yaml') : undefined
}

/** Rewrites the panel block of profiles.yaml from the hosts with true_detect_mode. */
export async function syncTrueDetectProfiles(): Promise<void> {
  const path = _profilesPath()
  if (!path) return
  const { current, next } = await _expected(path)
  if (next === null) {
    logger.warn(`true_detect_mode: ${path} does not exist; nothing written`)
    return
  }
  if (next !== current) writeFileAtomically(path, next)
}

/** The drift detector's pass: the panel's block rewritten when it is missing, edited or stale. */
export async function checkTrueDetectProfiles(): Promise<SurfaceCheck> {
  const out = cleanCheck()
  const path = _profilesPath()
  if (!path) return out
  const { current, next, hosts: count } = await _expected(path)
  if (next === null) {
    // Not the panel's file to invent: the engine's own profiles live there too, and its local API does not start without it.
    if (count) out.remaining.push(`${path} is missing: restore the engine's profiles.yaml; the panel then adds its block`)
    return out
  }
  if (next === current) return out
  writeFileAtomically(path, next)
  const had = current!.includes(_BEGIN) || _PANEL_DOC.test(current!)
  out.repaired.push({
    target: path,
    detail: `${path}: the panel-managed true_detect_mode block ${had ? (count ? 'differed' : 'was left over') : 'was missing'}: rewritten from the database`,
  })
  return out
}
