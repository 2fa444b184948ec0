import { rmSync } from 'node:fs'
import { isIP } from 'node:net'
import { eq } from 'drizzle-orm'
import { z } from 'zod'
import { whitelistEntries } from '../../../db/schema'
import { getDb, writeTransaction } from '../core/db'
import { badRequest, conflict, notFound } from '../core/errors'
import { getConfig } from '../core/config'
import { writeAudit, type AuditContext } from '../core/audit'
import { ipOrCidrText, safeText } from '../core/validate'
import { reconcileInTransaction } from '../proxy/sync/reconcile'
import { deleteDecisionsMatching } from './lapi'
import { invalidateDecisionCache } from './decisions'
import { cleanCheck, engineConfigDir, insideFolder, readFileOrNull, withEngineFiles, yamlString, type SurfaceCheck } from './engine-files'
import { writeFileAtomically } from '../core/files'

export const WHITELIST_FILE = ['parsers', 's02-enrich', 'panel-whitelist.yaml']

/** An IP or a CIDR, in canonical text. */
export function parseIpOrCidr(raw: string): { value: string; kind: 'ip' | 'cidr' } {
  const v = raw.trim().toLowerCase()
  const [addr, prefix, extra] = v.split('/')
  const family = isIP(addr ?? '')
  if (!family || extra !== undefined) throw badRequest('value: must be an IP address or a CIDR such as 192.0.2.0/24')
  if (prefix === undefined) return { value: addr!, kind: 'ip' }
  const bits = Number(prefix)
  if (!/^\d{1,3}$/.test(prefix) || bits > (family === 4 ? 32 : 128))
    throw badRequest(`value: the prefix length must be 0 to ${family === 4 ? 32 : 128}`)
  return { value: `${addr}/${bits}`, kind: 'cidr' }
}

export const whitelistBody = z.strictObject({ value: ipOrCidrText(), reason: safeText(200).optional() })

export function presentWhitelistEntry(r: typeof whitelistEntries.$inferSelect) {
  return { value: r.value, reason: r.reason, created_at: r.createdAt, created_by: r.createdBy }
}

export async function listWhitelist() {
  return { entries: (await getDb().select().from(whitelistEntries).orderBy(whitelistEntries.value)).map(presentWhitelistEntry) }
}

/**
 * The parser whitelist the engine loads (stage s02-enrich), derived from the
 * database; null for no entries. The engine (1.4.6 to 1.7.8) refuses to start
 * on a whitelist node with no entry ("Node is empty"), so no file is written
 * then; one empty list beside a non-empty one loads.
 */
export function renderWhitelistFile(entries: { value: string }[]): string | null {
  if (!entries.length) return null
  const ips = entries.filter((e) => !e.value.includes('/')).map((e) => yamlString(e.value))
  const cidrs = entries.filter((e) => e.value.includes('/')).map((e) => yamlString(e.value))
  return [
    '# Managed by the edge panel: edits here are overwritten. Change the whitelist in the panel.',
    'name: panel/whitelist',
    'description: "Operator whitelist managed by the panel"',
    'whitelist:',
    '  reason: "panel operator whitelist"',
    `  ip: [${ips.join(', ')}]`,
    `  cidr: [${cidrs.join(', ')}]`,
    '',
  ].join('\n')
}

export async function writeWhitelistFile(): Promise<void> {
  const entries = await getDb().select().from(whitelistEntries).orderBy(whitelistEntries.value)
  const path = insideFolder(engineConfigDir(), ...WHITELIST_FILE)
  const text = renderWhitelistFile(entries)
  if (text === null) rmSync(path, { force: true })
  else writeFileAtomically(path, text)
}

/** Adds an entry; the active decisions it covers go first (a 503 then changes nothing). */
export async function addWhitelistEntry(input: z.infer<typeof whitelistBody>, ctx: AuditContext) {
  const { value, kind } = parseIpOrCidr(input.value)
  engineConfigDir()
  if (await getDb().select().from(whitelistEntries).where(eq(whitelistEntries.value, value)).get())
    throw conflict(`value: ${value} is already whitelisted`)
  // The decisions the entry covers: the address's own Ip decisions, or every
  // decision inside the CIDR. A wider range that contains the entry stays.
  const removed =
    kind === 'ip'
      ? await deleteDecisionsMatching({ scopes: 'Ip', value })
      : await deleteDecisionsMatching({ range: value, contains: 'false' })
  await invalidateDecisionCache()
  const row = await withEngineFiles(async () => {
    const inserted = await writeTransaction(async (tx) => {
      const now = new Date().toISOString()
      const r = (await tx
        .insert(whitelistEntries)
        .values({ value, reason: input.reason ?? '', createdAt: now, createdBy: ctx.actor })
        .returning()
        .get())!
      await writeAudit(ctx, 'whitelist_add', { value, removed_decisions: removed }, tx)
      // The proxy's bouncer skips whitelisted sources: the configuration changes too.
      await reconcileInTransaction(tx, ctx, `whitelist entry ${value} added`)
      return r
    })
    await writeWhitelistFile()
    return inserted
  })
  return { ...presentWhitelistEntry(row), removed_decision_count: removed }
}

export async function removeWhitelistEntry(raw: string, ctx: AuditContext): Promise<void> {
  const { value } = parseIpOrCidr(raw)
  engineConfigDir()
  await withEngineFiles(async () => {
    await writeTransaction(async (tx) => {
      const row = await tx.select().from(whitelistEntries).where(eq(whitelistEntries.value, value)).get()
      if (!row) throw notFound('whitelist entry', value)
      await tx.delete(whitelistEntries).where(eq(whitelistEntries.value, value))
      await writeAudit(ctx, 'whitelist_delete', { value }, tx)
      await reconcileInTransaction(tx, ctx, `whitelist entry ${value} removed`)
    })
    await writeWhitelistFile()
  })
}

/** The drift detector's pass: the file rewritten (or removed) when it is not what the database says. */
export async function checkWhitelistFile(): Promise<SurfaceCheck> {
  const out = cleanCheck()
  if (!getConfig().crowdsecConfigDir) return out
  const entries = await getDb().select().from(whitelistEntries).orderBy(whitelistEntries.value)
  const path = insideFolder(engineConfigDir(), ...WHITELIST_FILE)
  const expected = renderWhitelistFile(entries)
  const current = readFileOrNull(path)
  if (current === expected) return out
  if (expected === null) rmSync(path, { force: true })
  else writeFileAtomically(path, expected)
  const detail =
    expected === null
      ? `${path} existed although the whitelist is empty (an empty whitelist node stops the engine): removed`
      : `${path} ${current === null ? 'was missing' : 'differed'}: rewritten from the database`
  out.repaired.push({ target: path, detail })
  return out
}
