import { execFile } from 'node:child_process'
import { accessSync, constants, statSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, isAbsolute, join, resolve } from 'node:path'
import { getConfig } from '../core/config'
import { badRequest, upstreamUnavailable } from '../core/errors'
import { BASIC_AUTH_USERNAME, BCRYPT_HASH } from '../hosts/access-list-schemas'
import { isValidHostname } from '../hosts/schemas'
import type { HostInput, RuleInput, TargetGroupInput } from '../hosts/schemas'
import { emptyHeaderImport, importEncode, importHeaders, type MappedNote } from './caddyfile-headers'
import { fileReadRefusal, flattenDirectives, scanCaddyfile, type ScannedBlock, type ScannedCaddyfile } from './caddyfile-scan'
import type { AuditContext } from '../core/audit'
import {
  PLACEHOLDER_GROUP,
  addPlannedGroup,
  addPlannedHost,
  applyImportPlan,
  dryRunImportPlan,
  emptyPlan,
  refusalOf,
  type ImportPlan,
  type ImportReport,
  type PlannedRule,
} from './plan'

// Caddyfile import (docs/import.md): the real `caddy adapt` turns the file into
// Caddy's JSON; each site route whose handlers have a panel equivalent becomes
// a host with its target groups, path rules and access list. Positions come
// from caddyfile-scan.ts, since the adapted JSON has none.

export const CADDYFILE_MAX_BYTES = 256 * 1024
const _ADAPT_TIMEOUT_MS = 15_000
/** The Caddy default realm of basic_auth. */
const _DEFAULT_REALM = 'restricted'

type Json = Record<string, any>

// What an adapt error may say: its line in the submitted file and one of these
// causes, never caddy's own words, which can quote what it read (a file's
// first line, had one been imported).
const _ADAPT_CAUSES: Array<[RegExp, string]> = [
  [/unrecognized directive/i, 'unrecognized directive'],
  [/unrecognized global option|unrecognized (?:option|subdirective|parameter)/i, 'unrecognized option'],
  [/argument count|wrong argument|unexpected argument/i, 'wrong number of arguments'],
  [/expecting '\}'|unexpected EOF|EOF/, "a block is not closed: '}' expected"],
  [/expecting '\{'/, "'{' expected"],
  [/heredoc/i, 'malformed heredoc'],
  [/curly brace|'\{'|'\}'|\{\}/, 'misplaced brace'],
  [/ambiguous site definition/i, 'a site address is defined twice'],
  [/parsing caddyfile tokens for/i, 'a directive has arguments caddy does not accept'],
]

/** A line reference and a generic cause from caddy's error output, nothing else of it. */
function _adaptError(stderr: string): string {
  const messages = stderr
    .split('\n')
    .map((l) => {
      try {
        const j = JSON.parse(l)
        return j && j.level === 'error' && typeof j.msg === 'string' ? (j.msg as string) : null
      } catch {
        // Caddy 2.6 writes its error as "Error: ..." text.
        return l.startsWith('Error: ') ? l : null
      }
    })
    .filter((m): m is string => m !== null)
  const text = messages.at(-1) ?? ''
  // Only a position in the submitted file ("Caddyfile:3", not "/other/Caddyfile:3").
  const line = /(?:^|[\s:])Caddyfile:(\d+)\b/.exec(text)?.[1]
  const cause = _ADAPT_CAUSES.find(([re]) => re.test(text))?.[1] ?? 'not valid Caddyfile syntax'
  return line ? `line ${line}: ${cause}` : cause
}

/** The caddy binary as an absolute path: it runs with an empty environment, so without a PATH. */
function _resolveBinary(bin: string): string | null {
  if (bin.includes('/')) return isAbsolute(bin) ? bin : resolve(bin)
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue
    const candidate = join(dir, bin)
    try {
      accessSync(candidate, constants.X_OK)
      if (statSync(candidate).isFile()) return candidate
    } catch {
      // not in this folder
    }
  }
  return null
}

/**
 * `caddy adapt` in a fresh empty folder with an empty environment: nothing of
 * the panel's environment (its secrets included) reaches it, and a relative
 * path can only name the folder's own Caddyfile. Whatever could make it read a
 * file is refused before this (fileReadRefusal); its errors are reduced to a
 * line and a generic cause. No sandbox beyond that: see docs/import.md.
 */
export async function adaptCaddyfile(text: string): Promise<Json> {
  const bin = getConfig().caddyBin
  const path = _resolveBinary(bin)
  if (!path)
    throw upstreamUnavailable('caddy adapt', `the caddy binary "${bin}" was not found: set PANEL_CADDY_BIN (docs/configuration.md)`)
  const dir = await mkdtemp(join(tmpdir(), 'panel-caddyfile-'))
  try {
    await writeFile(join(dir, 'Caddyfile'), text, { mode: 0o600 })
    const out = await new Promise<string>((resolvePromise, reject) => {
      execFile(
        path,
        ['adapt', '--adapter', 'caddyfile', '--config', 'Caddyfile'],
        { cwd: dir, env: {}, timeout: _ADAPT_TIMEOUT_MS, maxBuffer: 32 * 1024 * 1024 },
        (err, stdout, stderr) => {
          if (!err) return resolvePromise(stdout)
          if ((err as NodeJS.ErrnoException).code === 'ENOENT')
            return reject(
              upstreamUnavailable('caddy adapt', `the caddy binary "${bin}" was not found: set PANEL_CADDY_BIN (docs/configuration.md)`),
            )
          if (err.killed) return reject(upstreamUnavailable('caddy adapt', `no answer within ${_ADAPT_TIMEOUT_MS / 1000} s`))
          reject(badRequest(`Caddyfile does not adapt: ${_adaptError(stderr)}`))
        },
      )
    })
    return JSON.parse(out) as Json
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** The names a site block's addresses serve: scheme, port and commas dropped. */
function _siteNames(block: ScannedBlock): string[] {
  return block.header
    .flatMap((a) => a.split(','))
    .map((a) =>
      a
        .trim()
        .toLowerCase()
        .replace(/^[a-z]+:\/\//, '')
        .replace(/:\d+$/, '')
        .replace(/\/.*$/, ''),
    )
    .filter(Boolean)
}

/** Which directives a handler comes from, to name the line of something not imported. */
const _HANDLER_DIRECTIVES: Record<string, string[]> = {
  headers: ['header', 'request_header'],
  rewrite: ['rewrite', 'uri', 'handle_path', 'try_files', 'php_fastcgi'],
  vars: ['vars', 'root', 'map'],
  reverse_proxy: ['reverse_proxy', 'php_fastcgi', 'forward_auth'],
  static_response: ['respond', 'redir', 'error', 'abort'],
  authentication: ['basic_auth', 'basicauth'],
}
const _LB_POLICIES = new Set(['round_robin', 'least_conn', 'random', 'first', 'ip_hash', 'weighted_round_robin'])
const _REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
const _PROXY_KEYS = new Set(['handler', 'upstreams', 'load_balancing', 'health_checks', 'transport'])

interface _Match {
  paths: string[] | null
  methods: string[] | null
}

class _SiteMapper {
  readonly domain: string
  readonly source: string
  private readonly directives
  defaultGroup: string | null = null
  rules: PlannedRule[] = []
  accessList: string | null = null
  /** `encode` and `header` of the site: the host's compression and header rules. */
  readonly headers = emptyHeaderImport()
  /** An answer to every request of the site (redir, respond) that a host of its own kind can give. */
  siteAnswer: { rule: PlannedRule; kind: Partial<HostInput>; pathNote: string | null; source: string } | null = null
  private priority = 0

  constructor(
    private plan: ImportPlan,
    readonly names: string[],
    site: ScannedBlock | null,
    scan: ScannedCaddyfile,
  ) {
    this.domain = names[0]!
    this.source = site ? `Caddyfile line ${site.line}` : 'Caddyfile'
    this.directives = site ? flattenDirectives(site, scan.snippets) : []
  }

  /** The line of the first directive that can have made this handler. */
  lineOf(handler: string, prefer?: string): string {
    const names = prefer ? [prefer] : (_HANDLER_DIRECTIVES[handler] ?? [handler])
    const d = this.directives.find((x) => names.includes(x.name))
    return d ? `Caddyfile line ${d.line}` : this.source
  }

  note(list: 'imperfect' | 'notImportable', name: string, source: string, why: string) {
    const notes = list === 'imperfect' ? this.plan.imperfect : this.plan.notImportable
    const full = `${this.domain}: ${why}`
    // One note per thing: a snippet imported twice, or a handler seen on two routes, is said once.
    if (!notes.some((n) => n.name === name && n.source === source && n.why === full))
      notes.push({ kind: list === 'imperfect' ? 'host' : 'directive', name, source, why: full })
  }

  /** Each note at the line of the directive naming its header when there is one, else the handler's first line. */
  private notes(handler: string, notes: MappedNote[]) {
    for (const n of notes) {
      const header = n.name.startsWith('header ') ? n.name.slice(7).toLowerCase() : null
      const named = header
        ? this.directives.find(
            (d) =>
              (d.name === 'header' || d.name === 'request_header') && d.args.some((a) => a.replace(/^[-+?>]/, '').toLowerCase() === header),
          )
        : undefined
      this.note(n.list, n.name, named ? `Caddyfile line ${named.line}` : this.lineOf(handler), n.why)
    }
  }

  walk(routes: Json[], inherited: _Match) {
    for (const route of routes) {
      const match = this.matchOf(route, inherited)
      if (!match) continue
      for (const h of route.handle ?? []) this.handler(h, match)
    }
  }

  /**
   * Where a matcher was written: the named matcher (`@name`) that has this
   * condition, the directive that generates it (`file` comes from php_fastcgi
   * or try_files), or the first named matcher.
   */
  private matcherLine(keys: string[]): string {
    const d =
      this.directives.find((x) => x.name.startsWith('@') && keys.some((k) => x.args[0] === k || x.children.some((c) => c.name === k))) ??
      (keys.includes('file') ? this.directives.find((x) => x.name === 'php_fastcgi' || x.name === 'try_files') : undefined) ??
      this.directives.find((x) => x.name.startsWith('@'))
    return d ? `Caddyfile line ${d.line}` : this.source
  }

  private matchOf(route: Json, inherited: _Match): _Match | null {
    const sets: Json[] = route.match ?? []
    if (!sets.length) return inherited
    const unsupported = sets.flatMap((s) => Object.keys(s)).filter((k) => k !== 'path' && k !== 'method')
    const handlers = (route.handle ?? []).map((h: Json) => h.handler).join(', ')
    if (unsupported.length || (sets.length > 1 && sets.some((s) => s.method))) {
      this.note(
        'notImportable',
        `matcher ${[...new Set(unsupported)].join(', ') || 'method (several sets)'}`,
        this.matcherLine(unsupported),
        `the routes behind a ${[...new Set(unsupported)].join('/') || 'several-set'} matcher (${handlers}) are not imported: rules match by path and method only`,
      )
      return null
    }
    const paths = sets.flatMap((s) => s.path ?? [])
    const methods = sets.flatMap((s) => s.method ?? [])
    return { paths: paths.length ? paths : inherited.paths, methods: methods.length ? methods : inherited.methods }
  }

  private handler(h: Json, m: _Match) {
    switch (h.handler) {
      case 'subroute':
        return this.walk(h.routes ?? [], m)
      case 'reverse_proxy':
        return this.proxy(h, m)
      case 'static_response':
        return this.respond(h, m)
      case 'authentication':
        return this.basicAuth(h, m)
      // `root` sets a variable for file_server, which is reported itself.
      case 'vars':
        return
      case 'encode':
      case 'headers':
        return this.notes(h.handler, (h.handler === 'encode' ? importEncode : importHeaders)(this.headers, h, !!(m.paths || m.methods)))
      default: {
        const directive = this.directives.find((d) => (_HANDLER_DIRECTIVES[h.handler] ?? [h.handler]).includes(d.name))
        this.note(
          'notImportable',
          directive?.name ?? h.handler,
          this.lineOf(h.handler),
          `${directive?.name ?? h.handler} has no equivalent in the panel; not imported`,
        )
      }
    }
  }

  private ruleFor(
    m: _Match,
    source: string,
    input: Omit<RuleInput, 'target_group_id' | 'priority' | 'path' | 'methods'>,
    group: string | null,
  ) {
    for (const path of m.paths ?? ['/*']) {
      this.priority += 10
      const rule = { ...input, priority: this.priority, path, methods: m.methods ?? [] }
      const refused = refusalOf('rule', { ...rule, target_group_id: null })
      if (refused) {
        this.note('notImportable', `${input.action} ${path}`, source, `rule not imported: ${refused}`)
        continue
      }
      this.rules.push({ input: rule as PlannedRule['input'], group, source })
    }
  }

  private proxy(h: Json, m: _Match) {
    // The reverse_proxy line naming these upstreams (a site may have several).
    const dialsOf = (h.upstreams ?? []).map((u: Json) => String(u.dial ?? ''))
    const written = this.directives.find(
      (d) => d.name === 'reverse_proxy' && dialsOf.length > 0 && dialsOf.every((dial: string) => d.args.some((a) => a.endsWith(dial))),
    )
    const source = written
      ? `Caddyfile line ${written.line}`
      : this.lineOf('reverse_proxy', h.transport?.protocol === 'fastcgi' ? 'php_fastcgi' : h.handle_response ? 'forward_auth' : undefined)
    const childLine = (name: string) => {
      const c = written?.children.find((x) => x.name === name)
      return c ? `Caddyfile line ${c.line}` : source
    }
    if (h.transport?.protocol === 'fastcgi')
      return this.note('notImportable', 'php_fastcgi', source, 'FastCGI upstreams have no equivalent; not imported')
    if (h.handle_response || h.rewrite)
      return this.note(
        'notImportable',
        'forward_auth',
        source,
        "a reverse_proxy that handles responses or rewrites the request (forward_auth) has no equivalent; use the host's ForwardAuth to the panel instead",
      )
    if (h.dynamic_upstreams)
      return this.note('notImportable', 'dynamic upstreams', source, 'dynamic upstreams have no equivalent; not imported')
    const dials: string[] = (h.upstreams ?? []).map((u: Json) => String(u.dial ?? ''))
    if (!dials.length || dials.some((d) => /[{}]/.test(d)))
      return this.note('notImportable', 'reverse_proxy', source, 'upstreams given by placeholders have no equivalent; not imported')
    const selection = h.load_balancing?.selection_policy ?? {}
    let policy = selection.policy ?? 'random'
    if (!_LB_POLICIES.has(policy)) {
      this.note('imperfect', 'lb_policy', childLine('lb_policy'), `lb_policy ${policy} has no equivalent; round_robin instead`)
      policy = 'round_robin'
    }
    const weights: number[] = selection.weights ?? []
    const active = h.health_checks?.active
    const extra = Object.keys(h).filter((k) => !_PROXY_KEYS.has(k))
    if (extra.length) this.note('imperfect', 'reverse_proxy', source, `reverse_proxy settings not carried over: ${extra.join(', ')}`)
    if (h.health_checks?.passive) this.note('imperfect', 'reverse_proxy', source, 'passive health checks not carried over')
    const transportExtra = Object.keys(h.transport ?? {}).filter((k) => k !== 'protocol' && k !== 'tls')
    if (transportExtra.length)
      this.note('imperfect', 'reverse_proxy', source, `transport settings not carried over: ${transportExtra.join(', ')}`)
    const input: TargetGroupInput = {
      name: (m.paths || m.methods ? `${this.domain} ${[...(m.methods ?? []), ...(m.paths ?? [])].join(' ')}` : this.domain).slice(0, 100),
      targets: dials.map((address, i) => ({ address, weight: weights[i] ?? 1 })),
      scheme: h.transport?.tls ? 'https' : 'http',
      lb_policy: policy,
      tls_skip_verify: !!h.transport?.tls?.insecure_skip_verify,
      health_check: active
        ? {
            path: active.uri ?? active.path ?? '/',
            interval_seconds: Math.min(3600, Math.max(1, Math.round((active.interval ?? 30e9) / 1e9))),
            expect_status: Number(active.expect_status) || 200,
          }
        : null,
    }
    const group = addPlannedGroup(this.plan, { name: input.name, input, source })
    if (!group) return
    if (!m.paths && !m.methods) {
      if (this.defaultGroup)
        return this.note(
          'imperfect',
          'reverse_proxy',
          source,
          'a second reverse_proxy for every path is never reached (Caddy stops at the first); not imported',
        )
      this.defaultGroup = group
      return
    }
    this.ruleFor(
      m,
      source,
      {
        action: 'proxy',
        redirect_url: null,
        redirect_status: null,
        respond_status: null,
        respond_body: null,
        header_rules: [],
        geo_policy: null,
      },
      group,
    )
  }

  private respond(h: Json, m: _Match) {
    const location: string | undefined = h.headers?.Location?.[0]
    const source = this.lineOf('static_response', location ? 'redir' : 'respond')
    if (h.close || h.abort) return this.note('notImportable', 'abort', source, 'closing the connection has no equivalent; not imported')
    const status = Number(h.status_code ?? 200)
    if (!Number.isInteger(status))
      return this.note(
        'notImportable',
        location ? 'redir' : 'respond',
        source,
        `status ${h.status_code} given by a placeholder has no equivalent; not imported`,
      )
    if (location) {
      let url = location
      const keepPath = url.endsWith('{http.request.uri}')
      if (keepPath) url = url.slice(0, -'{http.request.uri}'.length) || '/'
      if (/[{}]/.test(url))
        return this.note('notImportable', 'redir', source, `redirect target ${location} uses placeholders; rules redirect to a fixed URL`)
      let redirectStatus = status
      if (!_REDIRECT_STATUSES.has(status)) {
        this.note('imperfect', 'redir', source, `redirect status ${status} has no equivalent; 302 instead`)
        redirectStatus = 302
      }
      const pathNote = keepPath
        ? `redirect to ${location}: the request's path is not appended (rules redirect to a fixed URL: ${url})`
        : null
      const rule = {
        action: 'redirect',
        redirect_url: url,
        redirect_status: redirectStatus as 302,
        respond_status: null,
        respond_body: null,
        header_rules: [],
        geo_policy: null,
      }
      // Only a redirect host keeps the path; an absolute target for every path can become one.
      const kind = /^https?:\/\//i.test(url)
        ? { kind: 'redirect' as const, redirect_to: url, redirect_status: redirectStatus as 302, redirect_keep_path: keepPath }
        : null
      return this.answerFor(m, source, rule as Parameters<_SiteMapper['ruleFor']>[2], kind, pathNote)
    }
    const body = typeof h.body === 'string' ? h.body : ''
    if (/[{}]/.test(body))
      return this.note('notImportable', 'respond', source, 'a response body with placeholders has no equivalent; not imported')
    const contentType = String(h.headers?.['Content-Type']?.[0] ?? 'text/plain; charset=utf-8')
    this.answerFor(
      m,
      source,
      {
        action: 'respond',
        redirect_url: null,
        redirect_status: null,
        respond_status: status,
        respond_body: body,
        header_rules: [],
        geo_policy: null,
      },
      status >= 200 ? { kind: 'static', static_status: status, static_content_type: contentType, static_body: body } : null,
      null,
    )
  }

  /**
   * A rule for the answer; when it answers every request of the site, also what the
   * host would be as a redirect or static host (_planRoute decides, once the whole
   * site is read). `pathNote` is said only if the answer stays a rule.
   */
  private answerFor(
    m: _Match,
    source: string,
    input: Parameters<_SiteMapper['ruleFor']>[2],
    kind: Partial<HostInput> | null,
    pathNote: string | null,
  ) {
    const before = this.rules.length
    this.ruleFor(m, source, input, null)
    if (kind && !m.paths && !m.methods && this.rules.length > before) this.siteAnswer = { rule: this.rules.at(-1)!, kind, pathNote, source }
    else if (pathNote) this.note('imperfect', 'redir', source, pathNote)
  }

  private basicAuth(h: Json, m: _Match) {
    const source = this.lineOf('authentication')
    const basic = h.providers?.http_basic
    if (!basic)
      return this.note('notImportable', 'authentication', source, 'only http_basic authentication has an equivalent; not imported')
    if ((basic.hash?.algorithm ?? 'bcrypt') !== 'bcrypt')
      return this.note(
        'notImportable',
        'basic_auth',
        source,
        `${basic.hash.algorithm} hashes have no equivalent (access lists take bcrypt); not imported`,
      )
    if (this.accessList)
      return this.note('imperfect', 'basic_auth', source, 'a host takes one access list: a second basic_auth is not imported')
    const users: Array<{ username: string; hash: string }> = []
    for (const a of basic.accounts ?? []) {
      const raw = String(a.password ?? '')
      const hash = raw.startsWith('$') ? raw : Buffer.from(raw, 'base64').toString('utf8')
      // The username only: the hash is a secret and never goes into a note.
      if (!BASIC_AUTH_USERNAME.test(String(a.username)) || !BCRYPT_HASH.test(hash)) {
        this.note(
          'notImportable',
          'basic_auth user',
          source,
          `user ${String(a.username).slice(0, 64)}: not a bcrypt hash or not a valid username; not imported`,
        )
        continue
      }
      users.push({ username: a.username, hash })
    }
    if (!users.length) return
    let realm = basic.realm ?? _DEFAULT_REALM
    if (!/^[A-Za-z0-9 ._-]{1,64}$/.test(realm)) {
      this.note(
        'imperfect',
        'basic_auth',
        source,
        `realm ${JSON.stringify(String(realm).slice(0, 64))} has characters access lists refuse; "${_DEFAULT_REALM}" instead`,
      )
      realm = _DEFAULT_REALM
    }
    if (m.paths || m.methods)
      this.note(
        'imperfect',
        'basic_auth',
        source,
        `basic_auth for ${[...(m.methods ?? []), ...(m.paths ?? [])].join(' ')} only: an access list protects the whole host`,
      )
    const name = `${this.domain} basic auth`.slice(0, 100)
    if (!this.plan.accessLists.some((l) => l.name === name))
      this.plan.accessLists.push({ name, source, values: { name, realm, default_action: 'allow', ip_rules: [], users } })
    this.accessList = name
  }
}

function _tlsOf(json: Json, names: string[]): { email: string | null; internal: boolean } {
  const policies: Json[] = json.apps?.tls?.automation?.policies ?? []
  const policy = policies.find((p) => (p.subjects ?? []).some((s: string) => names.includes(s))) ?? policies.find((p) => !p.subjects)
  const issuers: Json[] = policy?.issuers ?? (policy?.issuer ? [policy.issuer] : [])
  return {
    email: issuers.find((i) => i.module === 'acme' && i.email)?.email ?? null,
    internal: issuers.some((i) => i.module === 'internal'),
  }
}

/** The text caddy will read, or 400 for one that is too large, empty or would read files. */
function _checkedText(submitted: string): string {
  if (Buffer.byteLength(submitted, 'utf8') > CADDYFILE_MAX_BYTES)
    throw badRequest(`caddyfile: must be at most ${CADDYFILE_MAX_BYTES} bytes`)
  // The text exactly as caddy will read it from the file: a lone surrogate becomes U+FFFD in UTF-8.
  const text = Buffer.from(submitted, 'utf8').toString('utf8')
  if (!text.trim()) throw badRequest('caddyfile: is empty')
  const refused = fileReadRefusal(text)
  if (refused) throw badRequest(`caddyfile: line ${refused.line}: ${refused.message}`)
  return text
}

function _planGlobalOptions(plan: ImportPlan, scan: ScannedCaddyfile): void {
  for (const d of scan.global?.directives ?? []) {
    // layer4 is reported server by server (_planLayer4), in words a stream can be made from.
    if (d.name !== 'email' && d.name !== 'layer4')
      plan.notImportable.push({
        kind: 'global option',
        name: d.name,
        source: `Caddyfile line ${d.line}`,
        why: 'global options are not imported: the panel has its own settings (acme.email is taken from `email`)',
      })
  }
}

/** A layer-4 route's handlers in words: "proxy to 10.0.0.9:22", "tls, echo"; the matchers named too. */
function _layer4RouteWords(route: Json): string {
  const handlers = (route.handle ?? []).map((h: Json) => {
    if (h.handler !== 'proxy') return String(h.handler)
    const dials = (h.upstreams ?? []).flatMap((u: Json) => u.dial ?? [])
    return dials.length ? `proxy to ${dials.join(', ')}` : 'proxy'
  })
  const matchers = (route.match ?? []).flatMap((m: Json) => Object.keys(m))
  // A route without handlers ends the chain: in a listener wrapper, the connection goes on to the web server.
  return `${matchers.length ? `when ${matchers.join(' and ')} matches: ` : ''}${handlers.join(', ') || 'the rest goes on unchanged'}`
}

/**
 * The `layer4` global option (caddy-l4's app) and a `layer4` listener wrapper: raw TCP/UDP
 * routing this importer does not map. Each server is reported with its line, its listeners
 * and what its routes do, in words, so the operator can make streams of it (docs/streams.md).
 */
function _planLayer4(plan: ImportPlan, json: Json, scan: ScannedCaddyfile): void {
  const blocks = (scan.global?.directives ?? []).filter((d) => d.name === 'layer4')
  const servers = blocks.flatMap((b) => b.children)
  const adapted: Json[] = Object.values(json.apps?.layer4?.servers ?? {})
  servers.forEach((child, i) => {
    const server = adapted[i] ?? {}
    const listen: string[] = server.listen ?? [child.name, ...child.args]
    const routes = (server.routes ?? []).map(_layer4RouteWords)
    plan.notImportable.push({
      kind: 'layer4',
      name: listen.join(' '),
      source: `Caddyfile line ${child.line}`,
      why: `raw TCP/UDP routing (the layer4 option) is not imported${routes.length ? ` (it does: ${routes.join('; ')})` : ''}: create it as a stream on the Streams screen (a listen port or range, TCP or UDP, and a target group of its upstreams)`,
    })
  })
  // An empty layer4 block, or servers the scan could not tell apart: the block itself.
  if (blocks.length && !servers.length)
    for (const b of blocks)
      plan.notImportable.push({
        kind: 'layer4',
        name: 'layer4',
        source: `Caddyfile line ${b.line}`,
        why: 'raw TCP/UDP routing (the layer4 option) is not imported: create it as a stream on the Streams screen',
      })
  for (const [name, server] of Object.entries<Json>(json.apps?.http?.servers ?? {})) {
    const wrappers = (server.listener_wrappers ?? []).filter((w: Json) => w.wrapper === 'layer4')
    for (const w of wrappers) {
      const routes = (w.routes ?? []).map(_layer4RouteWords)
      plan.notImportable.push({
        kind: 'layer4',
        name: `listener wrapper of ${(server.listen ?? [name]).join(' ')}`,
        source: scan.global ? `Caddyfile line ${scan.global.line}` : 'Caddyfile',
        why: `raw TCP routing in front of the web server (a layer4 listener wrapper) is not imported${routes.length ? ` (it does: ${routes.join('; ')})` : ''}: a stream with server names (TLS SNI) on the HTTPS port shares it with the web hosts`,
      })
    }
  }
}

/** Notes for the site's directives the panel does not carry over: log, bind and the parts of tls it cannot. */
function _noteSiteDirectives(plan: ImportPlan, mapper: _SiteMapper, site: ScannedBlock | null, scan: ScannedCaddyfile, plain: boolean) {
  const directives = site ? flattenDirectives(site, scan.snippets) : []
  for (const d of directives) {
    if (d.name === 'log' || d.name === 'bind')
      plan.notImportable.push({
        kind: 'directive',
        name: d.name,
        source: `Caddyfile line ${d.line}`,
        why: `${mapper.domain}: ${d.name} is the panel's own (access logs and listeners); not imported`,
      })
  }
  for (const d of plain ? [] : directives.filter((x) => x.name === 'tls')) {
    const files = d.args.length === 2 && !d.args.some((a) => a.includes('@') || a === 'internal')
    const dns = d.children.find((c) => c.name === 'dns')
    if (files)
      plan.imperfect.push({
        kind: 'host',
        name: mapper.domain,
        source: `Caddyfile line ${d.line}`,
        why: `${mapper.domain}: certificate files are not read from the panel's machine; the host gets ACME until you upload the certificate (Certificates screen)`,
      })
    if (dns)
      plan.imperfect.push({
        kind: 'host',
        name: mapper.domain,
        source: `Caddyfile line ${dns.line}`,
        why: `${mapper.domain}: the DNS challenge (${dns.args[0] ?? 'provider'}) is not carried over, nor its credentials; the host uses HTTP-01: set up a DNS provider to switch`,
      })
  }
}

/** The host's default group: the site's reverse_proxy for every path, else the placeholder (noted). */
function _defaultGroup(plan: ImportPlan, mapper: _SiteMapper): string {
  if (mapper.defaultGroup) return mapper.defaultGroup
  const group = addPlannedGroup(plan, { ...PLACEHOLDER_GROUP, source: mapper.source })!
  const catchAll = mapper.rules.some((r) => r.input.path === '/*' && !r.input.methods.length)
  plan.imperfect.push({
    kind: 'host',
    name: mapper.domain,
    source: mapper.source,
    why: `${mapper.domain}: no reverse_proxy for every path; the host's default route goes to the group "${PLACEHOLDER_GROUP.name}" (nothing listens)${catchAll ? ', which a rule for /* answers before' : ': requests no rule matches get 502'}`,
  })
  return group
}

/** One route of the adapted JSON (one site block): a planned host, or a note saying why not. */
function _planRoute(plan: ImportPlan, json: Json, scan: ScannedCaddyfile, server: Json, route: Json): void {
  const plain = (server.listen ?? []).every((l: string) => l.endsWith(':80'))
  const hostNames: string[] = (route.match ?? []).flatMap((m: Json) => m.host ?? []).map((n: string) => n.toLowerCase())
  const listen: string[] = server.listen ?? []
  const site =
    scan.sites.find((s) =>
      hostNames.length ? _siteNames(s).includes(hostNames[0]!) : s.header.some((a) => listen.some((l) => a.replace(/,$/, '').endsWith(l))),
    ) ?? null
  if (!hostNames.length) {
    plan.notImportable.push({
      kind: 'site',
      name: (server.listen ?? []).join(' '),
      source: site ? `Caddyfile line ${site.line}` : 'Caddyfile',
      why: 'a site without a host name (an address or port only) has no equivalent: hosts are matched by name',
    })
    return
  }
  const mapper = new _SiteMapper(plan, hostNames, site, scan)
  const badName = hostNames.find((n) => !isValidHostname(n))
  if (badName) {
    plan.notImportable.push({
      kind: 'site',
      name: hostNames.join(' '),
      source: mapper.source,
      why: badName.startsWith('*.')
        ? `${badName} is a wildcard: its certificate needs a DNS provider; create this host by hand with tls_challenge "dns"`
        : `${badName} is not a host name the panel serves`,
    })
    return
  }
  const routes: Json[] =
    route.handle?.length === 1 && route.handle[0].handler === 'subroute' ? (route.handle[0].routes ?? []) : [{ handle: route.handle ?? [] }]
  mapper.walk(routes, { paths: null, methods: null })
  _noteSiteDirectives(plan, mapper, site, scan, plain)
  const tls = plain ? { email: null, internal: false } : _tlsOf(json, hostNames)
  if (tls.internal)
    plan.imperfect.push({
      kind: 'host',
      name: mapper.domain,
      source: mapper.lineOf('', 'tls'),
      why: `${mapper.domain}: Caddy's internal CA has no equivalent; the host gets an ACME certificate (tls_mode auto) instead, or upload one`,
    })
  // A site that only redirects or only answers is a host of that kind, without rules or a placeholder group.
  const answer = mapper.siteAnswer
  const asKind = !mapper.defaultGroup && !!answer && mapper.rules.length === 1 && mapper.rules[0] === answer.rule
  if (answer?.pathNote && !asKind) mapper.note('imperfect', 'redir', answer.source, answer.pathNote)
  const group = asKind ? null : _defaultGroup(plan, mapper)
  addPlannedHost(plan, {
    input: {
      domain: hostNames[0]!,
      aliases: hostNames.slice(1),
      tls_mode: plain ? 'none' : 'auto',
      tls_challenge: 'http',
      tls_email: tls.email,
      tls_dns_provider: null,
      tls_acme_ca_url: null,
      waf_mode: 'detection',
      rate_limit_rps: 50,
      rate_limit_burst: 100,
      ...(mapper.headers.compression ? { compression: mapper.headers.compression } : {}),
      header_rules: mapper.headers.rules,
      hsts: mapper.headers.hsts,
      ...(asKind ? answer.kind : {}),
    },
    group,
    rules: asKind ? [] : mapper.rules,
    accessList: mapper.accessList,
    source: mapper.source,
  })
}

/** Reads, adapts and maps a Caddyfile into an import plan; 400 for one that does not adapt or would read files. */
export async function planCaddyfileImport(submitted: string): Promise<ImportPlan> {
  const text = _checkedText(submitted)
  const scan = scanCaddyfile(text)
  const json = await adaptCaddyfile(text)
  const plan = emptyPlan()
  _planGlobalOptions(plan, scan)
  _planLayer4(plan, json, scan)
  const servers: Record<string, Json> = json.apps?.http?.servers ?? {}
  for (const server of Object.values(servers)) for (const route of server.routes ?? []) _planRoute(plan, json, scan, server, route)
  return plan
}

/** POST /api/import/caddyfile: the dry run (default) or the import itself. */
export async function importCaddyfile(text: string, apply: boolean, ctx: AuditContext): Promise<ImportReport> {
  const plan = await planCaddyfileImport(text)
  return apply ? applyImportPlan(plan, ctx, 'Caddyfile') : dryRunImportPlan(plan)
}
