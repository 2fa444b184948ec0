import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync, statSync, symlinkSync, unlinkSync } from 'node:fs'
import { z } from 'zod'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { scenarioOverrides } from '../../../db/schema'
import { getDb, writeTransaction } from '../core/db'
import { badRequest, notFound, upstreamUnavailable } from '../core/errors'
import { getConfig } from '../core/config'
import { writeAudit, type AuditContext } from '../core/audit'
import { logger } from '../core/log'
import { cleanCheck, insideFolder, readFileOrNull, withEngineFiles, type SurfaceCheck } from './engine-files'
import { writeFileAtomically } from '../core/files'

// Installed scenarios are files in <config>/scenarios: symlinks into the hub
// (hub items) or plain files (local items). Disabling one removes its symlink,
// as `cscli scenarios remove` does; the panel remembers the target to restore it.
// Both choices are kept (scenario_overrides.disabled true/false): the drift
// detector removes a disabled scenario's link that came back (a hub upgrade, the
// image's collection install) and restores a re-enabled one's that went missing.
// The disabled names are also written to <config>/panel-disabled-scenarios.txt,
// which the compose stack hands to the engine image's DISABLE_SCENARIOS, so the
// engine's own start script removes them before the engine reads its scenarios.

export interface Scenario {
  short_name: string
  source: 'hub' | 'local'
  canonical_name: string
  path: string
  disabled: boolean
  description?: string
}

/** <author>/<scenario>, as the engine's hub names them. */
export const SCENARIO_NAME_PATTERN = /^[a-z0-9][a-z0-9_.-]*\/[a-z0-9][a-z0-9_.-]*$/i

function _scenariosDir(): string | undefined {
  const dir = getConfig().crowdsecConfigDir
  return dir ? join(dir, 'scenarios') : undefined
}

/** The hub index's scenarios (name -> item); undefined when there is no readable index. */
function _hubScenarios(): Record<string, any> | undefined {
  const hub = getConfig().crowdsecHubDir
  if (!hub) return undefined
  try {
    return JSON.parse(readFileSync(join(hub, '.index.json'), 'utf8')).scenarios ?? {}
  } catch {
    return undefined /* no index produced yet */
  }
}

function _hubDescriptions(): Map<string, string> {
  const map = new Map<string, string>()
  for (const [name, item] of Object.entries<any>(_hubScenarios() ?? {})) if (item?.description) map.set(name, item.description)
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
  } catch {
    /* unreadable: fall back to the file name */
  }
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
    const canonical = isLink ? (canonicalFromHubPath(readlinkSync(path)) ?? `local/${shortName}`) : _localName(path, shortName)
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
    // A re-enabled scenario whose link is missing (until the detector restores it) is still listed, as enabled.
    if (!o.disabled && byName.has(o.canonicalName)) continue
    const shortName = o.canonicalName.split('/')[1]!
    byName.set(o.canonicalName, {
      short_name: shortName,
      source: 'hub',
      canonical_name: o.canonicalName,
      path: join(dir ?? '', `${shortName}.yaml`),
      disabled: o.disabled,
    })
  }
  const scenarios = [...byName.values()]
    .sort((a, b) => a.canonical_name.localeCompare(b.canonical_name))
    .map((s) => {
      const description = descriptions.get(s.canonical_name)
      return description ? { ...s, description } : s
    })
  return {
    scenarios,
    is_available: available,
    mount_path: dir ?? null,
    disabled_count: overrides.filter((o) => o.disabled).length,
    ...(available ? { last_modified_at: statSync(dir!).mtime.toISOString() } : {}),
  }
}

export const scenarioPatchBody = z.strictObject({ disabled: z.boolean({ message: 'must be true or false' }) })

/** PATCH: `{name}` arrives URL-encoded (`crowdsecurity%2Fhttp-probing`) and is decoded here. */
export async function setScenarioDisabled(rawName: string, disabled: boolean, ctx: AuditContext) {
  let name: string
  try {
    name = decodeURIComponent(rawName)
  } catch {
    throw badRequest('name: is not a valid URL-encoded scenario name')
  }
  if (!SCENARIO_NAME_PATTERN.test(name) || name.includes('..'))
    throw badRequest('name: must be <author>/<scenario> such as crowdsecurity%2Fhttp-probing')
  const dir = _scenariosDir()
  if (!dir || !existsSync(dir))
    throw upstreamUnavailable('security engine', 'its scenarios folder is not mounted (set CROWDSEC_CONFIG_DIR)')
  await withEngineFiles(async () => {
    const onDisk = listScenariosOnDisk().find((s) => s.canonical_name === name)
    const override = await getDb().select().from(scenarioOverrides).where(eq(scenarioOverrides.canonicalName, name)).get()
    if (!onDisk && !override) throw notFound('scenario', name)
    if (onDisk?.source === 'local') throw badRequest(`${name} is a local scenario; manage it in the engine's folder`)
    // The link on disk is the freshest target; a disabled scenario's is remembered.
    const linkTarget = onDisk ? readlinkSync(onDisk.path) : override!.linkTarget
    const row = await writeTransaction(async (tx) => {
      const now = new Date().toISOString()
      const saved = await tx
        .insert(scenarioOverrides)
        .values({ canonicalName: name, linkTarget, disabled, updatedAt: now })
        .onConflictDoUpdate({ target: scenarioOverrides.canonicalName, set: { linkTarget, disabled, updatedAt: now } })
        .returning()
        .get()
      await writeAudit(ctx, disabled ? 'scenario_disable' : 'scenario_enable', { name }, tx)
      return saved!
    })
    const applied = _applyChoice(dir, row)
    if (applied.problem) logger.warn(`scenario ${name}: ${applied.problem}`)
    _writeDisabledList(await _disabledNames())
  })
  return (await listScenarios()).scenarios.find((s) => s.canonical_name === name)
}

type _Choice = typeof scenarioOverrides.$inferSelect

/**
 * Makes one stored choice true on disk: a disabled scenario's link removed, a
 * re-enabled one's link restored. `changed` says what it did; `problem` what it
 * could not do and why (a local file in the way, a missing hub copy).
 */
function _applyChoice(dir: string, o: _Choice): { changed?: string; problem?: string } {
  const path = insideFolder(dir, `${o.canonicalName.split('/')[1]}.yaml`)
  const st = lstatSync(path, { throwIfNoEntry: false })
  if (o.disabled) {
    if (!st) return {}
    // Never delete an operator's own file: only hub links are the panel's to remove.
    if (!st.isSymbolicLink())
      return {
        problem: `${o.canonicalName} is disabled in the panel, but ${path} is a local file, not a hub link: the panel leaves it (remove or rename it in the engine's folder)`,
      }
    unlinkSync(path)
    return { changed: `${o.canonicalName} was installed again although disabled in the panel: its link was removed` }
  }
  if (st) return {}
  if (!existsSync(o.linkTarget))
    return {
      problem: `${o.canonicalName} is enabled in the panel, but its hub copy ${o.linkTarget} is missing: install it in the engine (cscli scenarios install ${o.canonicalName})`,
    }
  symlinkSync(o.linkTarget, path)
  return { changed: `${o.canonicalName} is enabled in the panel but its link was missing: the link was restored` }
}

/** The file the compose stack turns into the engine image's DISABLE_SCENARIOS (deploy/compose.yaml). */
export const DISABLED_SCENARIOS_FILE = 'panel-disabled-scenarios.txt'

/** One name per line after `#` comments; the stack drops the comment lines and joins the rest with spaces. */
export function renderDisabledScenariosFile(names: string[]): string {
  return [
    '# Managed by the edge panel: edits here are overwritten. The scenarios disabled in the panel, one a line;',
    "# the compose stack passes them to the engine image's DISABLE_SCENARIOS at every engine start.",
    ...[...names].sort(),
    '',
  ].join('\n')
}

/**
 * The disabled names the image's start script can act on. A name its hub index
 * does not know would make `cscli scenarios remove` fail and stop the engine's
 * start, so such names are left out (all are kept when no index can be read).
 */
async function _disabledNames(): Promise<string[]> {
  const known = _hubScenarios()
  return (await getDb().select().from(scenarioOverrides).where(eq(scenarioOverrides.disabled, true)))
    .map((o) => o.canonicalName)
    .filter((n) => !known || n in known)
}

function _disabledListPath(): string | undefined {
  const dir = getConfig().crowdsecConfigDir
  return dir ? insideFolder(dir, DISABLED_SCENARIOS_FILE) : undefined
}

/** Writes the list when it differs; returns what the file was before (null: missing) or undefined when unchanged. */
function _writeDisabledList(names: string[]): { before: string | null } | undefined {
  const path = _disabledListPath()
  if (!path) return undefined
  const next = renderDisabledScenariosFile(names)
  const before = readFileOrNull(path)
  if (before === next) return undefined
  writeFileAtomically(path, next)
  return { before }
}

/** The drift detector's pass over the scenarios: every stored choice re-applied, the list file rewritten. */
export async function checkScenarios(): Promise<SurfaceCheck> {
  const dir = _scenariosDir()
  const out = cleanCheck()
  if (!dir || !existsSync(dir)) return out
  for (const o of await getDb().select().from(scenarioOverrides)) {
    try {
      const r = _applyChoice(dir, o)
      if (r.changed) out.repaired.push({ target: o.canonicalName, detail: r.changed })
      if (r.problem) out.remaining.push(r.problem)
    } catch (err) {
      out.remaining.push(`${o.canonicalName}: ${(err as Error).message}`)
    }
  }
  try {
    const written = _writeDisabledList(await _disabledNames())
    if (written)
      out.repaired.push({
        target: _disabledListPath()!,
        detail: `${_disabledListPath()} ${written.before === null ? 'was missing' : 'differed'}: rewritten from the database`,
      })
  } catch (err) {
    out.remaining.push(`${DISABLED_SCENARIOS_FILE}: ${(err as Error).message}`)
  }
  return out
}
