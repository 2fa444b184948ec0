import { z } from 'zod'
import { getConfig } from '../core/config'
import { getSetting, updateSettings } from '../core/settings'
import { upstreamUnavailable } from '../core/errors'
import type { AuditContext } from '../core/audit'
import { cleanCheck, insideFolder, readFileOrNull, withEngineFiles, type SurfaceCheck } from './engine-files'
import { writeFileAtomically } from '../core/files'

// CRS anomaly thresholds for the engine's AppSec component, written as a
// panel-owned CRS plugin file in the engine's data folder. The project's AppSec
// rule panel/appsec-threshold (deploy/crowdsec/appsec-rules/) loads it at engine
// start and reload, one directive per line; between reloads the proxy carries the
// stored value to AppSec in a request header (proxy/build/crowdsec.ts), so a
// change applies without a reload. The proxy's own WAF reads the same values.

export const APPSEC_PLUGIN_FILE = ['crs-plugins', 'panel', 'panel-config.conf']

export const appsecTuningBody = z.strictObject({
  inbound_threshold: z.number().int('must be an integer').min(1, 'must be at least 1').max(10_000, 'must be at most 10000'),
  outbound_threshold: z.number().int('must be an integer').min(1, 'must be at least 1').max(10_000, 'must be at most 10000'),
})

export function renderAppsecPlugin(inbound: number, outbound: number): string {
  return [
    '# Managed by the edge panel: edits here are overwritten. Change the thresholds in the panel.',
    `SecAction "id:9990110,phase:1,pass,nolog,setvar:tx.inbound_anomaly_score_threshold=${inbound},setvar:tx.outbound_anomaly_score_threshold=${outbound}"`,
    '',
  ].join('\n')
}

function _pluginPath(): string | undefined {
  const dir = getConfig().crowdsecDataDir
  return dir ? insideFolder(dir, ...APPSEC_PLUGIN_FILE) : undefined
}

async function _expected(): Promise<string> {
  return renderAppsecPlugin(await getSetting<number>('appsec.inbound_threshold'), await getSetting<number>('appsec.outbound_threshold'))
}

export async function writeAppsecPlugin(): Promise<void> {
  const path = _pluginPath()
  if (path) writeFileAtomically(path, await _expected())
}

/** The drift detector's pass: the plugin file rewritten when it is missing or not the stored thresholds. */
export async function checkAppsecPlugin(): Promise<SurfaceCheck> {
  const out = cleanCheck()
  const path = _pluginPath()
  if (!path) return out
  const expected = await _expected()
  const current = readFileOrNull(path)
  if (current === expected) return out
  writeFileAtomically(path, expected)
  out.repaired.push({
    target: path,
    detail: `${path} ${current === null ? 'was missing' : 'differed from the stored thresholds'}: rewritten from the database`,
  })
  return out
}

export async function readAppsecTuning(driftDetected: boolean) {
  return {
    inbound_threshold: await getSetting<number>('appsec.inbound_threshold'),
    outbound_threshold: await getSetting<number>('appsec.outbound_threshold'),
    path: _pluginPath() ?? null,
    drift_detected: driftDetected,
  }
}

export async function updateAppsecTuning(input: z.infer<typeof appsecTuningBody>, ctx: AuditContext): Promise<void> {
  if (!_pluginPath()) throw upstreamUnavailable('security engine', 'its data folder is not mounted (set CROWDSEC_DATA_DIR)')
  await withEngineFiles(async () => {
    await updateSettings(
      { 'appsec.inbound_threshold': input.inbound_threshold, 'appsec.outbound_threshold': input.outbound_threshold },
      ctx,
    )
    await writeAppsecPlugin()
  })
}
