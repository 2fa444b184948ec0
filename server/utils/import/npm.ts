import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient, type Client } from '@libsql/client'
import { hash as bcryptHash } from '@node-rs/bcrypt'
import { badRequest } from '../core/errors'
import { NPM_ROW_LIMITS } from './npm-limits'
import type { AuditContext } from '../core/audit'
import { BASIC_AUTH_PASSWORD_MAX_BYTES, BASIC_AUTH_USERNAME, isIpOrCidr } from '../hosts/access-list-schemas'
import { BCRYPT_COST } from '../hosts/access-lists'
import { validateCertificateUpload } from '../hosts/cert-validation'
import { installManualCertInTransaction } from '../hosts/manual-certs'
import { isValidHostname, type HostInput, type TargetGroupInput } from '../hosts/schemas'
import { DNS_PROVIDER_CATALOGUE, nameInZone } from '../hosts/dns-catalogue'
import { assertDnsProviderUsable } from '../hosts/dns-providers'
import { openDnsCredentials } from '../hosts/dns-credentials'
import { dnsProviders } from '../../../db/schema'
import { getDb } from '../core/db'
import {
  addPlannedGroup,
  addPlannedHost,
  addPlannedStream,
  applyImportPlan,
  dryRunImportPlan,
  emptyPlan,
  refusalOf,
  type ImportPlan,
  type ImportReport,
  type PlannedHost,
  type PlannedRule,
} from './plan'

// nginx-proxy-manager import (docs/import.md): its SQLite database, read with the
// schema its own migrations (backend/migrations/*.js) leave: proxy_host (with
// custom `locations`), redirection_host, dead_host (404 hosts), stream,
// access_list with access_list_auth (clear-text passwords, which it turns into
// an htpasswd file) and access_list_client (allow/deny rules), certificate
// (`letsencrypt`, or `other` with the PEM in meta). Rows with is_deleted = 1 are
// what its UI deleted and are ignored.

type Row = Record<string, any>
const _TABLES = [
  'proxy_host',
  'redirection_host',
  'dead_host',
  'stream',
  'access_list',
  'access_list_auth',
  'access_list_client',
  'certificate',
] as const
const _REDIRECT_CODES = new Set([301, 302, 303, 307, 308])
/** nginx-proxy-manager's auth_basic realm. */
const _REALM = 'Authorization required'

function _json<T>(value: unknown, fallback: T): T {
  if (typeof value !== 'string') return (value as T) ?? fallback
  try {
    return JSON.parse(value) as T
  } catch {
    return fallback
  }
}
const _flag = (v: unknown) => Number(v) === 1

// Every table nginx-proxy-manager's migrations create (SQLite's own sqlite_*
// tables aside): a file with any other table, a view or a trigger was not
// written by it, and is refused before a row is read.
const _NPM_SCHEMA_TABLES = new Set<string>([
  ..._TABLES,
  'knex_migrations',
  'knex_migrations_lock',
  'auth',
  'user',
  'user_permission',
  'audit_log',
  'setting',
])
/** The columns read from each table (selected by name, never `*`); the first ones are required. */
const _COLUMNS: Record<(typeof _TABLES)[number], { required: string[]; optional: string[] }> = {
  proxy_host: {
    required: ['id', 'is_deleted', 'domain_names'],
    optional: [
      'forward_scheme',
      'forward_host',
      'forward_port',
      'access_list_id',
      'certificate_id',
      'locations',
      'advanced_config',
      'block_exploits',
      'caching_enabled',
      'enabled',
      'hsts_enabled',
      'hsts_subdomains',
    ],
  },
  redirection_host: {
    required: ['id', 'is_deleted', 'domain_names'],
    optional: [
      'forward_scheme',
      'forward_domain_name',
      'forward_http_code',
      'preserve_path',
      'certificate_id',
      'advanced_config',
      'block_exploits',
      'caching_enabled',
      'enabled',
      'hsts_enabled',
      'hsts_subdomains',
    ],
  },
  dead_host: {
    required: ['id', 'is_deleted', 'domain_names'],
    optional: ['certificate_id', 'advanced_config', 'block_exploits', 'caching_enabled', 'enabled', 'hsts_enabled', 'hsts_subdomains'],
  },
  stream: {
    required: ['id', 'is_deleted'],
    optional: ['incoming_port', 'forwarding_host', 'forwarding_port', 'tcp_forwarding', 'udp_forwarding', 'enabled', 'certificate_id'],
  },
  access_list: { required: ['id', 'is_deleted'], optional: ['name', 'satisfy_any', 'pass_auth'] },
  access_list_auth: { required: ['id', 'access_list_id'], optional: ['username', 'password'] },
  access_list_client: { required: ['id', 'access_list_id'], optional: ['address', 'directive'] },
  certificate: { required: ['id', 'is_deleted'], optional: ['provider', 'nice_name', 'meta'] },
}
const _notNpm = (why: string) => badRequest(`database: not an nginx-proxy-manager database: ${why}`)
const _shown = (name: unknown) => JSON.stringify(String(name).slice(0, 64))

/**
 * What a file must be before a row is read: nginx-proxy-manager's tables only,
 * no view or trigger (they run queries of the file's author), no generated or
 * hidden column (computed on read: one printf() can allocate a gigabyte), the
 * columns read present, and at most NPM_ROW_LIMITS rows per table.
 */
async function _checkSchema(client: Client): Promise<Record<(typeof _TABLES)[number], string[]>> {
  // The schema's text is the file author's: only its first characters are read.
  const master = (await client.execute('SELECT type, substr(name, 1, 200) AS name, substr(sql, 1, 64) AS head FROM sqlite_master')).rows
  // Another application's database is told apart by the tables it lacks first.
  const present = new Set(master.filter((r) => r.type === 'table').map((r) => String(r.name)))
  const missing = _TABLES.filter((t) => !present.has(t))
  if (missing.length) throw badRequest(`database: not an nginx-proxy-manager database (2.9 or later): table ${missing.join(', ')} missing`)
  for (const row of master) {
    const name = String(row.name)
    if (row.type === 'view' || row.type === 'trigger')
      throw _notNpm(`it holds the ${row.type} ${_shown(name)}; nginx-proxy-manager creates none`)
    if (row.type !== 'table' || name.startsWith('sqlite_')) continue
    if (!_NPM_SCHEMA_TABLES.has(name)) throw _notNpm(`the table ${_shown(name)} is not one of nginx-proxy-manager's`)
    if (/^\s*create\s+virtual/i.test(String(row.head ?? ''))) throw _notNpm(`the table ${_shown(name)} is a virtual table`)
  }
  const columns = {} as Record<(typeof _TABLES)[number], string[]>
  for (const t of _TABLES) {
    const info = (await client.execute(`PRAGMA table_xinfo("${t}")`)).rows
    const generated = info.find((c) => Number(c.hidden) !== 0)
    if (generated)
      throw _notNpm(`the column ${t}.${String(generated.name).slice(0, 64)} is generated or hidden; nginx-proxy-manager has none`)
    const have = new Set(info.map((c) => String(c.name)))
    const lacking = _COLUMNS[t].required.find((c) => !have.has(c))
    if (lacking) throw _notNpm(`the table ${t} has no column ${lacking}`)
    columns[t] = [..._COLUMNS[t].required, ..._COLUMNS[t].optional.filter((c) => have.has(c))]
    const rows = Number((await client.execute(`SELECT count(*) AS n FROM "${t}"`)).rows[0]!.n)
    if (rows > NPM_ROW_LIMITS[t])
      throw badRequest(`database: the table ${t} has ${rows} rows (deleted ones included); an import reads at most ${NPM_ROW_LIMITS[t]}`)
  }
  return columns
}

async function _readAll(client: Client): Promise<Record<(typeof _TABLES)[number], Row[]>> {
  const columns = await _checkSchema(client)
  const out = {} as Record<(typeof _TABLES)[number], Row[]>
  for (const t of _TABLES) {
    const deleted = t.startsWith('access_list_') ? '' : ' WHERE is_deleted = 0'
    const list = columns[t].map((c) => `"${c}"`).join(', ')
    out[t] = (await client.execute(`SELECT ${list} FROM "${t}"${deleted} ORDER BY id`)).rows as unknown as Row[]
  }
  return out
}

/** Opens the uploaded bytes as SQLite in a private temporary folder; 400 for anything that is not a readable database. */
async function _withDatabase<T>(bytes: Buffer, read: (client: Client) => Promise<T>): Promise<T> {
  if (!bytes.length) throw badRequest('database: the file is empty')
  if (!bytes.subarray(0, 16).equals(Buffer.from('SQLite format 3\u0000', 'latin1')))
    throw badRequest('database: not an SQLite database file (nginx-proxy-manager keeps its database in data/database.sqlite)')
  const dir = await mkdtemp(join(tmpdir(), 'panel-npm-'))
  const file = join(dir, 'database.sqlite')
  await writeFile(file, bytes, { mode: 0o600 })
  const client = createClient({ url: `file:${file}` })
  try {
    // Functions in the file's schema run only where SQLite deems them harmless; nothing is ever written to it.
    await client.execute('PRAGMA trusted_schema = OFF')
    await client.execute('PRAGMA query_only = ON')
    return await read(client)
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode) throw err
    throw badRequest(
      `database: cannot be read as an nginx-proxy-manager database (${String((err as Error).message)
        .split('\n')[0]!
        .slice(0, 200)})`,
    )
  } finally {
    client.close()
    await rm(dir, { recursive: true, force: true })
  }
}

function _address(host: unknown, port: unknown): string {
  const h = String(host ?? '').trim()
  return `${h.includes(':') && !h.startsWith('[') ? `[${h}]` : h}:${Number(port)}`
}

/** An nginx prefix location as a Caddy path matcher: /app matches /app, /app/x and /apple, as nginx does. */
function _locationPath(path: string): string | null {
  if (!path.startsWith('/') || /\s/.test(path)) return null
  return path.endsWith('*') ? path : `${path}*`
}

async function _planAccessLists(plan: ImportPlan, db: Record<string, Row[]>): Promise<Map<number, string>> {
  const names = new Map<number, string>()
  for (const list of db.access_list!) {
    const source = `access_list ${list.id}`
    const name =
      String(list.name ?? '')
        .trim()
        .slice(0, 100) || `access list ${list.id}`
    const users: Array<{ username: string; hash: string }> = []
    for (const u of db.access_list_auth!.filter((x) => Number(x.access_list_id) === Number(list.id))) {
      const password = String(u.password ?? '')
      // A note names the user, never the password.
      if (!BASIC_AUTH_USERNAME.test(String(u.username))) {
        plan.notImportable.push({
          kind: 'access_list user',
          name: String(u.username).slice(0, 64),
          source,
          why: `${name}: the username has characters basic auth refuses`,
        })
        continue
      }
      if (!password || Buffer.byteLength(password) > BASIC_AUTH_PASSWORD_MAX_BYTES) {
        plan.notImportable.push({
          kind: 'access_list user',
          name: String(u.username),
          source,
          why: `${name}: the stored password is empty or longer than ${BASIC_AUTH_PASSWORD_MAX_BYTES} bytes`,
        })
        continue
      }
      users.push({ username: String(u.username), hash: await bcryptHash(password, BCRYPT_COST) })
    }
    const ipRules: Array<{ action: 'allow' | 'deny'; source: string }> = []
    const clients = db.access_list_client!.filter((x) => Number(x.access_list_id) === Number(list.id))
    for (const c of clients) {
      const action = c.directive === 'deny' ? 'deny' : 'allow'
      const address = String(c.address ?? '')
        .trim()
        .toLowerCase()
      if (address === 'all') {
        ipRules.push({ action, source: '0.0.0.0/0' }, { action, source: '::/0' })
        continue
      }
      if (!isIpOrCidr(address)) {
        plan.notImportable.push({
          kind: 'access_list rule',
          name: `${action} ${address.slice(0, 100)}`,
          source,
          why: `${name}: not an IP address or CIDR range`,
        })
        continue
      }
      ipRules.push({ action, source: address })
    }
    if (_flag(list.satisfy_any) && users.length && clients.length)
      plan.imperfect.push({
        kind: 'access_list',
        name,
        source,
        why: `${name}: "satisfy any" (an allowed address OR a password) has no equivalent: the panel asks both`,
      })
    if (!_flag(list.pass_auth ?? 1) && users.length)
      plan.imperfect.push({
        kind: 'access_list',
        name,
        source,
        why: `${name}: the upstream now receives the Authorization header (nginx-proxy-manager removed it)`,
      })
    // Its rules end with "deny all" as soon as there is one.
    plan.accessLists.push({
      name,
      source,
      standalone: true,
      values: { name, realm: _REALM, default_action: clients.length ? 'deny' : 'allow', ip_rules: ipRules, users },
    })
    names.set(Number(list.id), name)
  }
  return names
}

interface _Tls {
  input: Pick<PlannedHost['input'], 'tls_mode' | 'tls_email'> & Partial<Pick<PlannedHost['input'], 'tls_challenge' | 'tls_dns_provider'>>
  after?: PlannedHost['after']
  extraItems?: PlannedHost['extraItems']
}

function _tlsOf(plan: ImportPlan, row: Row, certs: Map<number, Row>, names: string[], source: string, domain: string): _Tls {
  const id = Number(row.certificate_id)
  if (!id) return { input: { tls_mode: 'none', tls_email: null } }
  const cert = certs.get(id)
  if (!cert) {
    plan.imperfect.push({
      kind: 'host',
      name: domain,
      source,
      why: `${domain}: its certificate ${id} is deleted; the host gets an ACME certificate instead`,
    })
    return { input: { tls_mode: 'auto', tls_email: null } }
  }
  const meta = _json<Row>(cert.meta, {})
  if (cert.provider === 'letsencrypt') {
    const acme = {
      tls_mode: 'auto' as const,
      tls_email: typeof meta.letsencrypt_email === 'string' && meta.letsencrypt_email ? meta.letsencrypt_email.toLowerCase() : null,
    }
    if (!(_flag(meta.dns_challenge) || meta.dns_challenge === true)) return { input: acme }
    // The DNS provider's credentials are secrets of the other panel: never copied, never named.
    const npmId = String(meta.dns_provider ?? 'provider').slice(0, 40)
    const panel = _PANEL_DNS.get(plan)?.get(npmId)
    const outside = panel?.zone ? names.find((n) => !nameInZone(n, panel.zone!)) : undefined
    // Configured here: the host keeps DNS-01 with the panel's own credentials for that provider.
    if (panel?.usable && !outside) return { input: { ...acme, tls_challenge: 'dns', tls_dns_provider: panel.name } }
    plan.imperfect.push({
      kind: 'host',
      name: domain,
      source,
      why: !panel
        ? `${domain}: its Let's Encrypt certificate used a DNS challenge (${npmId}), which none of the panel's DNS providers offers; the host uses HTTP-01`
        : outside
          ? `${domain}: its Let's Encrypt certificate used a DNS challenge (${npmId}); ${outside} is outside the zone ${panel.zone} that ${panel.name} may update, so the host uses HTTP-01`
          : `${domain}: its Let's Encrypt certificate used a DNS challenge (${npmId}); the host uses HTTP-01 until ${panel.display_name} is configured: its credentials cannot be imported, so enter them under DNS providers (${panel.name}), then switch the host to DNS-01`,
    })
    return { input: acme }
  }
  const certName = String(cert.nice_name || `certificate ${id}`).slice(0, 100)
  try {
    const valid = validateCertificateUpload(
      {
        certPem: String(meta.certificate ?? ''),
        keyPem: String(meta.certificate_key ?? ''),
        chainPem: meta.intermediate_certificate ? String(meta.intermediate_certificate) : null,
      },
      names,
    )
    return {
      // Uploaded after the host exists (tls_mode becomes manual then); until then ACME would be asked.
      input: { tls_mode: 'none', tls_email: null },
      after: async (tx, host, ctx) => {
        await installManualCertInTransaction(tx, host, valid, ctx)
      },
      extraItems: [{ kind: 'certificate', name: `${certName} for ${domain}`, source: `certificate ${id}` }],
    }
  } catch (err) {
    plan.imperfect.push({
      kind: 'certificate',
      name: certName,
      source: `certificate ${id}`,
      why: `${domain}: the custom certificate is not usable (${(err as Error).message}); the host gets an ACME certificate instead`,
    })
    return { input: { tls_mode: 'auto', tls_email: null } }
  }
}

function _names(plan: ImportPlan, row: Row, kind: string, source: string): string[] | null {
  const names = _json<string[]>(row.domain_names, []).map((n) => String(n).trim().toLowerCase())
  const bad = names.find((n) => !isValidHostname(n))
  if (!names.length || bad) {
    plan.notImportable.push({
      kind,
      name: names.join(' ') || `${kind} ${row.id}`,
      source,
      why: bad?.startsWith('*.')
        ? `${bad} is a wildcard: its certificate needs a DNS provider; create this host by hand with tls_challenge "dns"`
        : `${bad ?? 'no name'} is not a host name the panel serves`,
    })
    return null
  }
  return names
}

function _commonNotes(plan: ImportPlan, row: Row, domain: string, source: string) {
  if (String(row.advanced_config ?? '').trim())
    plan.imperfect.push({ kind: 'host', name: domain, source, why: `${domain}: its custom nginx configuration is not carried over` })
  if (_flag(row.block_exploits))
    plan.imperfect.push({
      kind: 'host',
      name: domain,
      source,
      why: `${domain}: "block common exploits" is not carried over; enable the host's WAF instead`,
    })
  if (_flag(row.caching_enabled))
    plan.imperfect.push({ kind: 'host', name: domain, source, why: `${domain}: asset caching is not carried over` })
}

/**
 * nginx-proxy-manager's HSTS switches: it sends max-age=63072000 (two years), includeSubDomains
 * with hsts_subdomains, and always preload. The preload list requires subdomains, so preload is
 * kept only with them (docs/import.md).
 */
function _hstsOf(row: Row) {
  if (!_flag(row.hsts_enabled)) return {}
  const subdomains = _flag(row.hsts_subdomains)
  return { hsts: { max_age: 63_072_000, include_subdomains: subdomains, preload: subdomains } }
}

function _baseInput(names: string[], row: Row, tls: _Tls) {
  return {
    ..._hstsOf(row),
    domain: names[0]!,
    aliases: names.slice(1),
    enabled: _flag(row.enabled ?? 1),
    tls_challenge: 'http' as const,
    tls_dns_provider: null,
    tls_acme_ca_url: null,
    waf_mode: 'detection' as const,
    rate_limit_rps: 50,
    rate_limit_burst: 100,
    ...tls.input,
  }
}

/** A host that answers itself (a redirect, a 404 page): its kind's fields, no target group. */
function _kindHost(plan: ImportPlan, names: string[], row: Row, tls: _Tls, source: string, kind: Partial<HostInput>) {
  addPlannedHost(plan, {
    input: { ..._baseInput(names, row, tls), ...kind },
    group: null,
    rules: [],
    accessList: null,
    source,
    after: tls.after,
    extraItems: tls.extraItems,
  })
}

/** What every kind of host row starts with: its source, names, TLS and the notes all kinds share; null when it cannot be imported. */
function _hostHead(plan: ImportPlan, row: Row, table: string, certs: Map<number, Row>) {
  const source = `${table} ${row.id}`
  const names = _names(plan, row, table, source)
  if (!names) return null
  const domain = names[0]!
  const tls = _tlsOf(plan, row, certs, names, source, domain)
  _commonNotes(plan, row, domain, source)
  return { source, names, domain, tls }
}

/** A target group of one address for a proxy host or one of its locations; its name, or null when refused. */
function _plannedGroup(
  plan: ImportPlan,
  name: string,
  target: { scheme: unknown; host: unknown; port: unknown },
  from: string,
): string | null {
  const input: TargetGroupInput = {
    name: name.slice(0, 100),
    targets: [{ address: _address(target.host, target.port), weight: 1 }],
    scheme: target.scheme === 'https' ? 'https' : 'http',
    lb_policy: 'round_robin',
    health_check: null,
    tls_skip_verify: false,
  }
  return addPlannedGroup(plan, { name: input.name, input, source: from })
}

/** One custom location of a proxy host: a proxy rule with its own group, or a note saying why not. */
function _planLocation(plan: ImportPlan, loc: Row, i: number, domain: string, source: string): PlannedRule | null {
  const path = _locationPath(String(loc.path ?? ''))
  const where = `${source} location ${i + 1}`
  if (!path) {
    plan.notImportable.push({
      kind: 'location',
      name: `${domain} ${String(loc.path).slice(0, 100)}`,
      source: where,
      why: 'only prefix locations (/path) map to rules; regular-expression locations do not',
    })
    return null
  }
  if (String(loc.forward_path ?? '').trim())
    plan.imperfect.push({
      kind: 'rule',
      name: `${domain} ${path}`,
      source: where,
      why: `${domain}: the location forwarded to the path ${String(loc.forward_path).slice(0, 100)}; the rule forwards the request's own path`,
    })
  if (String(loc.advanced_config ?? '').trim())
    plan.imperfect.push({
      kind: 'rule',
      name: `${domain} ${path}`,
      source: where,
      why: `${domain}: the location's custom nginx configuration is not carried over`,
    })
  const target = { scheme: loc.forward_scheme, host: loc.forward_host, port: loc.forward_port }
  const locGroup = _plannedGroup(plan, `${domain} ${path}`, target, where)
  if (!locGroup) return null
  const rule = {
    priority: 10 * (i + 1),
    path,
    methods: [],
    action: 'proxy' as const,
    redirect_url: null,
    redirect_status: null,
    respond_status: null,
    respond_body: null,
    header_rules: [],
    geo_policy: null,
  }
  const refused = refusalOf('rule', { ...rule, target_group_id: null })
  if (refused) {
    plan.notImportable.push({ kind: 'location', name: `${domain} ${path}`, source: where, why: refused })
    return null
  }
  return { input: rule, group: locGroup, source: where }
}

/** proxy_host: a host with its group, one rule per custom location and its access list. */
function _planProxyHost(plan: ImportPlan, row: Row, certs: Map<number, Row>, lists: Map<number, string>): void {
  const head = _hostHead(plan, row, 'proxy_host', certs)
  if (!head) return
  const { source, names, domain, tls } = head
  const group = _plannedGroup(plan, domain, { scheme: row.forward_scheme, host: row.forward_host, port: row.forward_port }, source)
  if (!group) return
  const rules: PlannedRule[] = []
  _json<Row[]>(row.locations, []).forEach((loc, i) => {
    const rule = _planLocation(plan, loc, i, domain, source)
    if (rule) rules.push(rule)
  })
  const listId = Number(row.access_list_id)
  const accessList = listId ? (lists.get(listId) ?? null) : null
  if (listId && !accessList)
    plan.imperfect.push({
      kind: 'host',
      name: domain,
      source,
      why: `${domain}: its access list ${listId} is deleted; the host is imported without one`,
    })
  addPlannedHost(plan, {
    input: _baseInput(names, row, tls),
    group,
    rules,
    accessList,
    source,
    after: tls.after,
    extraItems: tls.extraItems,
  })
}

/** redirection_host: a redirect host; NPM's "auto" scheme is the request's own (a bare host name). */
function _planRedirectionHost(plan: ImportPlan, row: Row, certs: Map<number, Row>): void {
  const head = _hostHead(plan, row, 'redirection_host', certs)
  if (!head) return
  const { source, names, domain, tls } = head
  const note = (why: string) => plan.imperfect.push({ kind: 'host', name: domain, source, why: `${domain}: ${why}` })
  const target = String(row.forward_domain_name ?? '').trim()
  let scheme = String(row.forward_scheme ?? 'auto')
  if (scheme !== 'http' && scheme !== 'https' && !isValidHostname(target.toLowerCase())) {
    note(`the redirect kept the request's scheme; ${target} is not a bare host name, so it now always goes to https`)
    scheme = 'https'
  }
  let status = Number(row.forward_http_code ?? 302)
  if (!_REDIRECT_CODES.has(status)) {
    note(`redirect status ${status} has no equivalent; 302 instead`)
    status = 302
  }
  _kindHost(plan, names, row, tls, source, {
    kind: 'redirect',
    redirect_to: scheme === 'http' || scheme === 'https' ? `${scheme}://${target}` : target,
    redirect_status: status as 302,
    redirect_keep_path: _flag(row.preserve_path),
  })
}

/** dead_host (a 404 host): a static host answering 404. */
function _planDeadHost(plan: ImportPlan, row: Row, certs: Map<number, Row>): void {
  const head = _hostHead(plan, row, 'dead_host', certs)
  if (!head) return
  _kindHost(plan, head.names, row, head.tls, head.source, {
    kind: 'static',
    static_status: 404,
    static_content_type: 'text/plain; charset=utf-8',
    static_body: 'Not Found\n',
  })
}

/**
 * stream: one panel stream per protocol it forwards (docs/streams.md), named after its port
 * and protocol (the natural key of a re-import), each to a target group of its one upstream.
 */
function _planStream(plan: ImportPlan, row: Row): void {
  const source = `stream ${row.id}`
  const port = Number(row.incoming_port)
  const upstream = _address(row.forwarding_host, row.forwarding_port)
  const protocols = (['tcp', 'udp'] as const).filter((p) => _flag(row[`${p}_forwarding`]))
  if (!protocols.length) {
    plan.notImportable.push({
      kind: 'stream',
      name: `port ${port} to ${upstream}`,
      source,
      why: 'it forwards neither TCP nor UDP (both switched off in nginx-proxy-manager)',
    })
    return
  }
  // The group's scheme and health check are the web hosts'; a stream uses only its targets and balancing.
  const group = addPlannedGroup(plan, {
    name: `stream ${port}`,
    source,
    input: {
      name: `stream ${port}`,
      targets: [{ address: upstream, weight: 1 }],
      scheme: 'http',
      lb_policy: 'round_robin',
      health_check: null,
      tls_skip_verify: false,
    },
  })
  if (!group) return
  for (const protocol of protocols) {
    const name = `stream ${port}/${protocol}`
    if (Number(row.certificate_id) && protocol === 'tcp')
      plan.imperfect.push({
        kind: 'stream',
        name,
        source,
        why: `${name}: nginx-proxy-manager ended TLS with its certificate ${Number(row.certificate_id)}; the stream passes the bytes through untouched, so the upstream must speak TLS itself`,
      })
    addPlannedStream(plan, { name, group, source, input: { name, protocol, listen_port: port, enabled: _flag(row.enabled ?? 1) } })
  }
}

/**
 * Reads an nginx-proxy-manager database into an import plan; 400 for a file that is not one.
 * One planner per source table, in this order: access lists and certificates first (hosts refer to them).
 */
/** A panel DNS provider an NPM dns_provider id maps to, and whether a host may use it now. */
interface _PanelDns {
  name: string
  display_name: string
  usable: boolean
  zone: string | null
}
/** Per plan (the planners are synchronous): NPM's dns_provider id → the panel's provider. */
const _PANEL_DNS = new WeakMap<ImportPlan, Map<string, _PanelDns>>()

async function _panelDnsProviders(): Promise<Map<string, _PanelDns>> {
  const rows = new Map((await getDb().select().from(dnsProviders)).map((r) => [r.name, r]))
  const out = new Map<string, _PanelDns>()
  for (const def of DNS_PROVIDER_CATALOGUE) {
    // The host save's own rule (enabled with credentials, or provider_a's legacy variable).
    const usable = await assertDnsProviderUsable(getDb(), def.name).then(
      () => true,
      () => false,
    )
    const row = rows.get(def.name)
    const zone = usable && row?.credentials ? (openDnsCredentials(row)?.zone ?? null) : null
    for (const id of def.npm_ids ?? []) out.set(id, { name: def.name, display_name: def.display_name, usable, zone })
  }
  return out
}

export async function planNpmImport(bytes: Buffer): Promise<ImportPlan> {
  const panelDns = await _panelDnsProviders()
  return _withDatabase(bytes, async (client) => {
    const db = await _readAll(client)
    const plan = emptyPlan()
    _PANEL_DNS.set(plan, panelDns)
    const lists = await _planAccessLists(plan, db)
    const certs = new Map(db.certificate.map((c) => [Number(c.id), c]))
    for (const row of db.proxy_host) _planProxyHost(plan, row, certs, lists)
    for (const row of db.redirection_host) _planRedirectionHost(plan, row, certs)
    for (const row of db.dead_host) _planDeadHost(plan, row, certs)
    for (const row of db.stream) _planStream(plan, row)
    return plan
  })
}

/** POST /api/import/npm: the dry run (default) or the import itself. */
export async function importNpmDatabase(bytes: Buffer, apply: boolean, ctx: AuditContext): Promise<ImportReport> {
  const plan = await planNpmImport(bytes)
  return apply ? applyImportPlan(plan, ctx, 'nginx-proxy-manager') : dryRunImportPlan(plan)
}
