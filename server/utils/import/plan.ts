import { inArray } from 'drizzle-orm'
import { accessLists, hostNames, streams, targetGroups } from '../../../db/schema'
import { getDb, writeTransaction, type Executor, type Tx } from '../core/db'
import { getSetting } from '../core/settings'
import { writeAudit, type AuditContext } from '../core/audit'
import { parseWith } from '../core/validate'
import { presentReconcile, reconcileInTransaction } from '../proxy/sync/reconcile'
import { insertAccessList, setHostAccessListInTransaction, type AccessListValues } from '../hosts/access-lists'
import { insertHost } from '../hosts/hosts'
import { insertRule } from '../hosts/rules'
import { insertTargetGroup } from '../hosts/target-groups'
import {
  HOST_DEFAULTS,
  hostBody,
  resolveHostFields,
  ruleBody,
  targetGroupBody,
  type HostInput,
  type RuleInput,
  type TargetGroupInput,
} from '../hosts/schemas'
import { assertHostKindFields } from '../hosts/kinds'
import { STREAM_DEFAULTS, streamBody, type Stream, type StreamInput } from '../streams/schemas'
import { insertStream } from '../streams/streams'
import { proxyPortConflict, proxyPortsOf, streamConflict } from '../streams/conflicts'
import { readStreams } from '../streams/records'
import { getConfig } from '../core/config'

// What every importer produces (Caddyfile, nginx-proxy-manager): a plan of
// objects keyed by name, and notes on what maps imperfectly or not at all. The
// same plan answers a dry run and is applied in one transaction with one
// reconcile. Natural keys make a re-import create nothing twice: a host whose
// domain exists is left alone, a group or list whose name exists is reused.

/** Where an object came from, in the operator's terms ("Caddyfile line 12", "proxy_host 3"). */
export type ImportSource = string

export interface PlannedGroup {
  name: string
  input: TargetGroupInput
  source: ImportSource
}
/** `standalone`: created even when no new host uses it (a list of its own in the source, not a host's basic auth). */
export interface PlannedAccessList {
  name: string
  values: AccessListValues
  source: ImportSource
  standalone?: boolean
}
export interface PlannedRule {
  input: Omit<RuleInput, 'target_group_id'>
  group: string | null
  source: ImportSource
}
export interface PlannedHost {
  input: Omit<HostInput, 'target_group_id'>
  /** Null for a host of a kind that needs no upstream (a redirect, a static page). */
  group: string | null
  rules: PlannedRule[]
  accessList: string | null
  source: ImportSource
  /** Extra work once the host exists (an uploaded certificate), inside the same transaction. */
  after?: (tx: Tx, host: { id: number; domain: string }, ctx: AuditContext) => Promise<void>
  /** What `after` creates, for the report. */
  extraItems?: Array<{ kind: 'certificate'; name: string; source: ImportSource }>
}
/** A stream (docs/streams.md) to a planned group; its name is its natural key on a re-import. */
export interface PlannedStream {
  name: string
  input: Omit<StreamInput, 'target_group_id'>
  group: string
  source: ImportSource
}
export interface ImportNote {
  kind: string
  name: string
  source: ImportSource
  why: string
}

export interface ImportPlan {
  groups: PlannedGroup[]
  accessLists: PlannedAccessList[]
  hosts: PlannedHost[]
  streams: PlannedStream[]
  imperfect: ImportNote[]
  notImportable: ImportNote[]
}

export type ImportOutcome = 'create' | 'exists'
/** The TLS a new host gets, in words, with a warning when importing starts an order at a public CA. */
export interface ImportHostTls {
  mode: 'auto' | 'manual' | 'none'
  text: string
  warning: string | null
}
export interface ImportReport {
  applied: boolean
  items: Array<{
    kind: 'target_group' | 'access_list' | 'host' | 'rule' | 'certificate' | 'stream'
    name: string
    source: ImportSource
    outcome: ImportOutcome
    /** Hosts to be created: the TLS each gets. */
    tls?: ImportHostTls
    /** Created objects of an applied import: their id (the UI links to the host). */
    id?: number
  }>
  imperfect: ImportNote[]
  not_importable: ImportNote[]
  reconcile?: ReturnType<typeof presentReconcile>
}

/** A group for hosts whose every request a rule answers (redirect-only, 404 hosts): nothing listens on the discard port. */
export const PLACEHOLDER_GROUP = {
  name: 'import: no upstream',
  input: {
    name: 'import: no upstream',
    targets: [{ address: '127.0.0.1:9', weight: 1 }],
    scheme: 'http',
    lb_policy: 'round_robin',
    health_check: null,
    tls_skip_verify: false,
  } satisfies TargetGroupInput,
}

export function emptyPlan(): ImportPlan {
  return { groups: [], accessLists: [], hosts: [], streams: [], imperfect: [], notImportable: [] }
}

/** The zod message of a planned object that the API would refuse, or null when it would pass. */
export function refusalOf(kind: 'host' | 'target_group' | 'rule' | 'stream', value: unknown): string | null {
  const schema = kind === 'host' ? hostBody : kind === 'rule' ? ruleBody : kind === 'stream' ? streamBody : targetGroupBody
  try {
    parseWith(schema as never, value)
    return null
  } catch (err) {
    return (err as Error).message
  }
}

/** Adds a host unless another host of the plan already claims one of its names. */
export function addPlannedHost(plan: ImportPlan, host: PlannedHost): boolean {
  const names = new Set([host.input.domain, ...host.input.aliases])
  const clash = plan.hosts.find((h) => [h.input.domain, ...h.input.aliases].some((n) => names.has(n)))
  if (clash) {
    plan.notImportable.push({
      kind: 'host',
      name: host.input.domain,
      source: host.source,
      why: `its names repeat ${clash.input.domain} (${clash.source})`,
    })
    return false
  }
  const refused = refusalOf('host', { ...host.input, target_group_id: host.group ? 1 : null }) ?? _kindRefusal(host)
  if (refused) {
    plan.notImportable.push({ kind: 'host', name: host.input.domain, source: host.source, why: refused })
    return false
  }
  plan.hosts.push(host)
  return true
}

/** What the host's kind needs (hosts/kinds.ts), checked before applying, where a refusal would undo the whole import. */
function _kindRefusal(host: PlannedHost): string | null {
  try {
    const input = hostBody.parse({ ...host.input, target_group_id: host.group ? 1 : null })
    assertHostKindFields(resolveHostFields(input, HOST_DEFAULTS))
    return null
  } catch (err) {
    return (err as Error).message
  }
}

/** Adds a stream the API would accept on its own (cross-row conflicts are checked when it is applied). */
export function addPlannedStream(plan: ImportPlan, stream: PlannedStream): boolean {
  const refused = refusalOf('stream', { ...stream.input, target_group_id: 1 })
  const twin = plan.streams.find((s) => s.name === stream.name)
  if (refused || twin) {
    plan.notImportable.push({
      kind: 'stream',
      name: stream.name,
      source: stream.source,
      why: refused ?? `its port and protocol repeat ${twin!.source}`,
    })
    return false
  }
  plan.streams.push(stream)
  return true
}

/** A group of this name once, whoever asks for it first. */
export function addPlannedGroup(plan: ImportPlan, group: PlannedGroup): string | null {
  const refused = refusalOf('target_group', group.input)
  if (refused) {
    plan.notImportable.push({ kind: 'target_group', name: group.name, source: group.source, why: refused })
    return null
  }
  if (!plan.groups.some((g) => g.name === group.name)) plan.groups.push(group)
  return group.name
}

async function _idsByName(exec: Executor, table: typeof targetGroups | typeof accessLists, names: string[]): Promise<Map<string, number>> {
  if (!names.length) return new Map()
  const rows = await exec.select({ id: table.id, name: table.name }).from(table).where(inArray(table.name, names))
  return new Map(rows.map((r) => [r.name, r.id]))
}

// ACME directories of public CAs: an automatic-TLS host asks them for a real certificate at once,
// which fails (and counts against their rate limits) for a name that does not point at this proxy.
const _PUBLIC_ACME = /(^|\.)(letsencrypt\.org|zerossl\.com|buypass\.(com|no)|pki\.goog|sectigo\.com|ssl\.com|digicert\.com)$/i
const _CHALLENGE_WORDS: Record<string, string> = { http: 'HTTP-01', 'tls-alpn': 'TLS-ALPN-01', dns: 'DNS-01' }

/** What TLS the planned host gets once created, as the host screen names it (exported for the unit test). */
export function describeImportTls(host: PlannedHost, defaultCa: string): ImportHostTls {
  if (host.extraItems?.some((x) => x.kind === 'certificate'))
    return { mode: 'manual', text: 'Uploaded certificate (the one from the source)', warning: null }
  if (host.input.tls_mode === 'none') return { mode: 'none', text: 'None (plain HTTP)', warning: null }
  if (host.input.tls_mode === 'manual') return { mode: 'manual', text: 'Uploaded certificate', warning: null }
  const ca = host.input.tls_acme_ca_url ?? (defaultCa || null)
  let caHost = "Let's Encrypt (the proxy's default CA)"
  let publicCa = !ca
  if (ca) {
    try {
      caHost = new URL(ca).host
    } catch {
      caHost = ca
    }
    publicCa = _PUBLIC_ACME.test(caHost.replace(/:\d+$/, ''))
  }
  const text = `Automatic (ACME), ${_CHALLENGE_WORDS[host.input.tls_challenge ?? 'http'] ?? host.input.tls_challenge} challenge, from ${caHost}`
  const warning = publicCa
    ? `importing starts a certificate order at a public CA at once: ${
        host.input.tls_challenge === 'dns'
          ? `the DNS provider must be able to publish records for ${host.input.domain}`
          : `${host.input.domain} must point at this proxy from the Internet`
      }, or the order fails. To try an import first, set "Default ACME directory URL" in Settings -> Certificates (ACME) to a test CA, or change the host's TLS mode to None after importing.`
    : null
  return { mode: 'auto', text, warning }
}

async function _run(exec: Executor, plan: ImportPlan, ctx: AuditContext, tx: Tx | null): Promise<ImportReport> {
  const items: ImportReport['items'] = []
  const notImportable = [...plan.notImportable]
  const allNames = plan.hosts.flatMap((h) => [h.input.domain, ...h.input.aliases])
  const taken = new Map(
    (allNames.length ? await exec.select().from(hostNames).where(inArray(hostNames.name, allNames)) : []).map((r) => [r.name, r.hostId]),
  )
  const hostsToCreate: PlannedHost[] = []
  for (const host of plan.hosts) {
    if (taken.has(host.input.domain)) {
      items.push({ kind: 'host', name: host.input.domain, source: host.source, outcome: 'exists' })
      continue
    }
    const alias = host.input.aliases.find((a) => taken.has(a))
    if (alias) {
      notImportable.push({
        kind: 'host',
        name: host.input.domain,
        source: host.source,
        why: `alias ${alias} is already used by host ${taken.get(alias)}`,
      })
      continue
    }
    hostsToCreate.push(host)
  }
  const streamsToCreate = await _streamsToCreate(exec, plan, items, notImportable)
  // Only what the new hosts and streams use; an existing name is reused as it is.
  const groupNames = new Set([
    ...hostsToCreate.flatMap((h) => [h.group, ...h.rules.map((r) => r.group)].filter((g): g is string => !!g)),
    ...streamsToCreate.map((s) => s.group),
  ])
  const listNames = new Set([
    ...hostsToCreate.map((h) => h.accessList).filter((l): l is string => !!l),
    ...plan.accessLists.filter((l) => l.standalone).map((l) => l.name),
  ])
  const groupIds = await _idsByName(exec, targetGroups, [...groupNames])
  const listIds = await _idsByName(exec, accessLists, [...listNames])
  for (const g of plan.groups.filter((x) => groupNames.has(x.name))) {
    const exists = groupIds.has(g.name)
    items.push({ kind: 'target_group', name: g.name, source: g.source, outcome: exists ? 'exists' : 'create' })
    if (!exists && tx) groupIds.set(g.name, (await insertTargetGroup(tx, g.input, ctx)).id)
  }
  for (const l of plan.accessLists.filter((x) => listNames.has(x.name))) {
    const exists = listIds.has(l.name)
    items.push({ kind: 'access_list', name: l.name, source: l.source, outcome: exists ? 'exists' : 'create' })
    if (!exists && tx) listIds.set(l.name, (await insertAccessList(tx, l.values, ctx)).id)
  }
  const defaultCa = hostsToCreate.some((h) => h.input.tls_mode === 'auto') ? await getSetting<string>('acme.ca_url', exec) : ''
  for (const h of hostsToCreate) {
    const item: ImportReport['items'][number] = {
      kind: 'host',
      name: h.input.domain,
      source: h.source,
      outcome: 'create',
      tls: describeImportTls(h, defaultCa),
    }
    items.push(item)
    for (const r of h.rules)
      items.push({ kind: 'rule', name: `${h.input.domain} ${r.input.path} (${r.input.action})`, source: r.source, outcome: 'create' })
    for (const x of h.extraItems ?? []) items.push({ ...x, outcome: 'create' })
    if (!tx) continue
    const row = await insertHost(tx, { ...h.input, target_group_id: h.group ? groupIds.get(h.group)! : null }, ctx)
    item.id = row.id
    for (const r of h.rules) await insertRule(tx, row.id, { ...r.input, target_group_id: r.group ? groupIds.get(r.group)! : null }, ctx)
    if (h.accessList) await setHostAccessListInTransaction(tx, row.id, listIds.get(h.accessList)!, ctx)
    if (h.after) await h.after(tx, row, ctx)
  }
  for (const st of streamsToCreate) {
    const item: ImportReport['items'][number] = { kind: 'stream', name: st.name, source: st.source, outcome: 'create' }
    items.push(item)
    if (tx) item.id = (await insertStream(tx, { ...st.input, target_group_id: groupIds.get(st.group)! }, ctx)).id
  }
  return { applied: !!tx, items, imperfect: plan.imperfect, not_importable: notImportable }
}

/** The API's 409 text (streams/conflicts.ts) when the proxy's own listeners or a stored stream hold the port. */
function _portHeld(fields: Parameters<typeof proxyPortConflict>[0], ports: ReturnType<typeof proxyPortsOf>, others: Stream[]) {
  return proxyPortConflict(fields, ports) ?? others.map((o) => streamConflict(fields, o)).find((m) => m) ?? null
}

/**
 * The planned streams to create: one whose name exists is left as it is; one whose port
 * another listener or stream holds is reported (the API's 409 text), not fatal to the rest.
 */
async function _streamsToCreate(exec: Executor, plan: ImportPlan, items: ImportReport['items'], notImportable: ImportNote[]) {
  const names = plan.streams.map((s) => s.name)
  const existing = new Set(
    names.length ? (await exec.select({ name: streams.name }).from(streams).where(inArray(streams.name, names))).map((r) => r.name) : [],
  )
  const out: PlannedStream[] = []
  const ports = proxyPortsOf(getConfig().proxy)
  const others = plan.streams.length ? await readStreams(exec) : []
  for (const st of plan.streams) {
    if (existing.has(st.name)) {
      items.push({ kind: 'stream', name: st.name, source: st.source, outcome: 'exists' })
      continue
    }
    const held = _portHeld({ ...STREAM_DEFAULTS, ...st.input, tls_sni: [] }, ports, others)
    if (held) {
      notImportable.push({ kind: 'stream', name: st.name, source: st.source, why: held })
      continue
    }
    out.push(st)
  }
  return out
}

/** What applying would do, reading the database only. */
export function dryRunImportPlan(plan: ImportPlan): Promise<ImportReport> {
  return _run(getDb(), plan, { actor: 'dry-run' }, null)
}

/** Everything in one transaction, one audit row for the import, one reconcile; a proxy rejection rolls all of it back. */
export function applyImportPlan(plan: ImportPlan, ctx: AuditContext, what: string): Promise<ImportReport> {
  return writeTransaction(async (tx) => {
    const report = await _run(tx, plan, ctx, tx)
    const created = report.items.filter((i) => i.outcome === 'create')
    const count = (kind: string) => created.filter((i) => i.kind === kind).length
    await writeAudit(
      ctx,
      'import_apply',
      {
        source: what,
        hosts: count('host'),
        target_groups: count('target_group'),
        rules: count('rule'),
        access_lists: count('access_list'),
        certificates: count('certificate'),
        streams: count('stream'),
        existing: report.items.length - created.length,
        imperfect: report.imperfect.length,
        not_importable: report.not_importable.length,
      },
      tx,
    )
    if (!created.length) return report
    // An imported certificate is in the configuration itself (load_pem): no forced reload.
    return { ...report, reconcile: presentReconcile(await reconcileInTransaction(tx, ctx, `import from ${what}`)) }
  })
}
