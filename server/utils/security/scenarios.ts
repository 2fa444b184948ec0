import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync, statSync, symlinkSync, unlinkSync } from 'node:fs'
import { z } from 'zod'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { scenarioOverrides } from '../../../db/schema'
import { getDb, writeTransaction } from '../core/db'
import { badRequest, notFound } from '../core/errors'
import { getConfig } from '../core/config'
import { writeAudit, type AuditContext } from '../core/audit'
import { insideFolder } from './engine-files'

// Installed scenarios are files in <config>/scenarios: symlinks into the hub
// (hub items) or plain files (local items). Disabling one removes its symlink,
// as `cscli scenarios remove` does; the panel remembers the target to restore it.

export interface Scenario { short_name: string; source: 'hub' | 'local'; canonical_name: string; path: string; disabled: boolean; description?: string }

const _CANONICAL = /^[a-z0-9][a-z0-9_.-]*\/[a-z0-9][a-z0-9_.-]*$/i

function _scenariosDir(): string | undefined {
  const dir = getConfig().crowdsecConfigDir
  return dir ? join(dir, 'scenarios') : undefined
}

function _hubDescriptions(): Map<string, string> {
  const hub = getConfig().crowdsecHubDir
  const map = new Map<string, string>()
  if (!hub) return map
  try {
    const index = JSON.parse(readFileSync(join(hub, '.index.json'), 'utf8'))
    for (const [name, item] of Object.entries<any>(index.scenarios ?? {})) if (item?.description) map.set(name, item.description)
  } catch { /* no index produced yet: descriptions are omitted */ }
  return map
}

/** `<author>/<name>` from a hub path such as …/scenarios/crowdsecurity/http-probing.yaml. */
export function canonicalFromHubPath(target: string): string | undefined {
  const m = /scenarios\/([^/]+)\/([^/]+)\.ya?ml$/.exec(target)
  return m ? `${m[1]}/${m[2]}` : undefined
}

function _localName(path: string, shortName: string): string {
  try {
    const m = /^name:\s*["']?([^"'\n]+)["']?\s*$/m.exec(readFileSync(path, 'utf8'))
    if (m) return m[1]!.trim()
  } catch { /* unreadable: fall back to the file name */ }
  return `local/${shortName}`
}

export function listScenariosOnDisk(): Scenario[] {
  const dir = _scenariosDir()
  if (!dir || !existsSync(dir)) return []
  const out: Scenario[] = []
  for (const file of readdirSync(dir)) {
    if (!/\.ya?ml$/.test(file)) continue
    const path = join(dir, file)
    const shortName = file.replace(/\.ya?ml$/, '')
    const isLink = lstatSync(path).isSymbolicLink()
    const canonical = isLink ? canonicalFromHubPath(readlinkSync(path)) ?? `local/${shortName}` : _localName(path, shortName)
    out.push({ short_name: shortName, source: isLink ? 'hub' : 'local', canonical_name: canonical, path, disabled: false })
  }
  return out
}

export async function listScenarios() {
  const dir = _scenariosDir()
  const available = !!dir && existsSync(dir)
  const descriptions = _hubDescriptions()
  const overrides = await getDb().select().from(scenarioOverrides)
  const byName = new Map(listScenariosOnDisk().map((s) => [s.canonical_name, s]))
  for (const o of overrides) {
    const shortName = o.canonicalName.split('/')[1]!
    byName.set(o.canonicalName, { short_name: shortName, source: 'hub', canonical_name: o.canonicalName, path: join(dir ?? '', `${shortName}.yaml`), disabled: true })
  }
  const scenarios = [...byName.values()].sort((a, b) => a.canonical_name.localeCompare(b.canonical_name)).map((s) => {
    const description = descriptions.get(s.canonical_name)
    return description ? { ...s, description } : s
  })
  return {
    scenarios, is_available: available, mount_path: dir ?? null, disabled_count: overrides.length,
    ...(available ? { last_modified_at: statSync(dir!).mtime.toISOString() } : {}),
  }
}

export const scenarioPatchBody = z.strictObject({ disabled: z.boolean({ message: 'must be true or false' }) })

/** PATCH: `{name}` arrives URL-encoded (`crowdsecurity%2Fhttp-probing`) and is decoded here. */
export async function setScenarioDisabled(rawName: string, disabled: boolean, ctx: AuditContext) {
  let name: string
  try { name = decodeURIComponent(rawName) } catch { throw badRequest('name: is not a valid URL-encoded scenario name') }
  if (!_CANONICAL.test(name) || name.includes('..')) throw badRequest('name: must be <author>/<scenario> such as crowdsecurity%2Fhttp-probing')
  const dir = _scenariosDir()
  if (!dir || !existsSync(dir)) throw badRequest("the engine's scenarios folder is not mounted (set CROWDSEC_CONFIG_DIR)")
  const onDisk = listScenariosOnDisk().find((s) => s.canonical_name === name)
  const override = await getDb().select().from(scenarioOverrides).where(eq(scenarioOverrides.canonicalName, name)).get()
  if (!onDisk && !override) throw notFound('scenario', name)
  if (onDisk?.source === 'local') throw badRequest(`${name} is a local scenario; manage it in the engine's folder`)
  await writeTransaction(async (tx) => {
    const now = new Date().toISOString()
    if (disabled) {
      const target = override?.linkTarget ?? readlinkSync(onDisk!.path)
      await tx.insert(scenarioOverrides).values({ canonicalName: name, linkTarget: target, updatedAt: now })
        .onConflictDoUpdate({ target: scenarioOverrides.canonicalName, set: { updatedAt: now } })
    } else if (override) {
      await tx.delete(scenarioOverrides).where(eq(scenarioOverrides.canonicalName, name))
    }
    await writeAudit(ctx, disabled ? 'scenario_disable' : 'scenario_enable', { name }, tx)
  })
  await applyScenarioOverrides(!disabled && override ? { name, target: override.linkTarget } : undefined)
  return (await listScenarios()).scenarios.find((s) => s.canonical_name === name)
}

/** Makes the disk match the stored set: disabled symlinks removed, re-enabled ones restored. */
export async function applyScenarioOverrides(extraEnable?: { name: string; target: string }): Promise<void> {
  const dir = _scenariosDir()
  if (!dir || !existsSync(dir)) return
  for (const o of await getDb().select().from(scenarioOverrides)) {
    const path = insideFolder(dir, `${o.canonicalName.split('/')[1]}.yaml`)
    if (existsSync(path) && lstatSync(path).isSymbolicLink()) unlinkSync(path)
  }
  if (extraEnable) {
    const path = insideFolder(dir, `${extraEnable.name.split('/')[1]}.yaml`)
    if (!existsSync(path)) symlinkSync(extraEnable.target, path)
  }
}

/** Differences between the stored disabled set and the disk (for the drift detector). */
export async function scenarioDrift(): Promise<string[]> {
  const dir = _scenariosDir()
  if (!dir || !existsSync(dir)) return []
  const details: string[] = []
  for (const o of await getDb().select().from(scenarioOverrides)) {
    if (existsSync(join(dir, `${o.canonicalName.split('/')[1]}.yaml`))) details.push(`${o.canonicalName} is disabled in the panel but installed on disk`)
  }
  return details
}
