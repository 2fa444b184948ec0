import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { hosts } from '../../../db/schema'
import { getDb } from '../core/db'
import { getConfig } from '../core/config'
import { logger } from '../core/log'
import { writeFileAtomically, yamlString } from './engine-files'

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

/** The file's own content with the panel's block (if any) taken out. */
export function stripPanelBlock(text: string): string {
  const start = text.indexOf(_BEGIN)
  const end = text.indexOf(_END)
  if (start < 0 || end < 0) return text
  return text.slice(0, start) + text.slice(end + _END.length).replace(/^\n/, '')
}

/** Rewrites the panel block of profiles.yaml from the hosts with true_detect_mode. */
export async function syncTrueDetectProfiles(): Promise<void> {
  const dir = getConfig().crowdsecConfigDir
  if (!dir) return
  const path = join(dir, 'profiles.yaml')
  if (!existsSync(path)) { logger.warn(`true_detect_mode: ${path} does not exist; nothing written`); return }
  const rows = await getDb().select().from(hosts).where(eq(hosts.trueDetectMode, true)).orderBy(hosts.id)
  const block = renderTrueDetectProfiles(rows.map((h) => ({ id: h.id, names: [h.domain, ...h.aliases] })))
  const current = readFileSync(path, 'utf8')
  const next = block + stripPanelBlock(current)
  if (next !== current) writeFileAtomically(path, next)
}
