import type { HostSnapshot, Json, ProxySnapshot, WafExclusionSnapshot } from './types'
import {
  CONTENT_TYPE_PATTERN,
  CRS_FILES,
  WAF_CONTROL_RULE_RANGE,
  WAF_EXCLUSION_ARGUMENT,
  WAF_EXCLUSION_PATH,
  WAF_FAMILIES,
  WAF_FAST_BASE_RULE_IDS,
  WAF_PROFILE_DEFAULTS,
  WAF_VIRTUAL_PATCHES,
  type WafLimitAction,
  type WafProfile,
} from './waf-rules'

/** Our own rule id (outside the CRS 9xxxxx rule files we load); the engine-side appsec plugin uses the same id. */
export const WAF_THRESHOLD_RULE_ID = 9990110
/** Our own phase-5 rule that keeps detection mode's audit log to the transactions blocking mode would have blocked. */
export const WAF_DETECTION_AUDIT_RULE_ID = 9990120
/** Sets the host's allowed content types before CRS 901162 would set its default. */
export const WAF_CONTENT_TYPES_RULE_ID = 9990111
/** Hands the host's body limits to the proxy's body processors (deploy/proxy/caddy/wafext). */
export const WAF_BODY_LIMITS_RULE_ID = 9990130
/** `pass`: a body declared larger than the size limit is not read by the WAF at all. */
export const WAF_BODY_PASS_RULE_ID = 9990131
/** `refuse`: a body over the argument or depth limit is refused. */
export const WAF_BODY_REFUSE_RULE_ID = 9990132
/** An exclusion's own rule id (when it needs a rule): this base plus the exclusion's id. */
export const WAF_EXCLUSION_RULE_BASE = 10_000_000

export interface EffectiveWaf {
  profile: WafProfile
  families: string[]
  bodyLimitBytes: number
  /** 0: no limit. */
  maxArgs: number
  /** 0: no limit. */
  jsonMaxDepth: number
  limitAction: WafLimitAction
  /** null: the CRS default list. */
  contentTypes: string[] | null
}

type WafHost = Pick<
  HostSnapshot,
  | 'waf_mode'
  | 'waf_profile'
  | 'waf_families'
  | 'waf_body_limit_kb'
  | 'waf_body_max_args'
  | 'waf_json_max_depth'
  | 'waf_body_limit_action'
  | 'waf_allowed_content_types'
>

/** The host's settings with the profile's defaults filled in where the host left them empty. */
export function resolveEffectiveWaf(host: WafHost): EffectiveWaf {
  const d = WAF_PROFILE_DEFAULTS[host.waf_profile]
  return {
    profile: host.waf_profile,
    families: WAF_FAMILIES.map((f) => f.id).filter((id) => host.waf_families.includes(id)),
    bodyLimitBytes: (host.waf_body_limit_kb ?? d.bodyLimitKb) * 1024,
    maxArgs: host.waf_body_max_args ?? d.maxArgs,
    jsonMaxDepth: host.waf_json_max_depth ?? d.jsonMaxDepth,
    limitAction: host.waf_body_limit_action ?? d.limitAction,
    contentTypes: host.waf_allowed_content_types,
  }
}

/**
 * The operator's own argument limit, when it leaves values uninspected (`partial` or
 * `pass`; `refuse` refuses such a body instead): padding a body with that many harmless
 * values carries an injection past the WAF. Said on every push that builds the host, so
 * that the host form and the API answer both show it (docs/waf.md).
 */
export function wafBodyMaxArgsWarning(host: WafHost & Pick<HostSnapshot, 'domain'>): string | null {
  const n = host.waf_body_max_args
  if (n === null) return null
  const action = resolveEffectiveWaf(host).limitAction
  if (action === 'refuse') return null
  const past = action === 'pass' ? 'a body with more is not inspected at all' : `the values after the first ${n} are not inspected`
  // Words for the host form's save message too: no field names.
  return `host ${host.domain}: its WAF argument limit is ${n} values of a request body: ${past}, so an attack placed after ${n} harmless values gets through. Clear the limit to inspect every value, or refuse a body over it`
}

/** A path placed in SecLang text: a space, quote or line break would end or inject a directive. */
function _assertSafeDirectivePath(path: string): void {
  if (!path || /[\s"'\\\u0000-\u001f\u007f]/.test(path)) throw new Error(`unsafe path refused in WAF directives: ${JSON.stringify(path)}`)
}

/** Values the API validated; checked again here because they are spliced into SecLang. */
function _assertSafeExclusion(e: WafExclusionSnapshot): void {
  const ok =
    Number.isInteger(e.rule_id) &&
    e.rule_id > 0 &&
    e.rule_id < WAF_EXCLUSION_RULE_BASE &&
    !(e.rule_id >= WAF_CONTROL_RULE_RANGE[0] && e.rule_id <= WAF_CONTROL_RULE_RANGE[1]) &&
    (e.path === null || (WAF_EXCLUSION_PATH.test(e.path) && !e.path.includes('%{'))) &&
    (e.argument === null || WAF_EXCLUSION_ARGUMENT.test(e.argument))
  if (!ok) throw new Error(`unsafe WAF exclusion refused: ${JSON.stringify(e)}`)
}

/**
 * Detection mode's audit selection (Coraza v3.3.3 ProcessLogging): RelevantOnly writes a
 * transaction when a rule with `auditlog` matched AND its status matches
 * SecAuditLogRelevantStatus, whose recommended value (4xx/5xx) never matches the 200 that
 * detection mode answers. So any status is relevant there, and a logging-phase rule turns
 * the audit engine off for this transaction when both scores stayed below their thresholds
 * (the comparisons of CRS 949110/959100 and 980044/980045). ProcessLogging evaluates the
 * phase-5 rules before it reads tx.AuditEngine, so the ctl takes effect for this very entry.
 * The ctl sits on the chained rule: Coraza runs a chain starter's non-disruptive actions
 * even when the rest of the chain does not match.
 */
function _detectionAuditDirectives(): string[] {
  return [
    // Any status, the empty one too (an upstream error leaves the response status unset).
    'SecAuditLogRelevantStatus ".*"',
    `SecRule TX:BLOCKING_INBOUND_ANOMALY_SCORE "@lt %{tx.inbound_anomaly_score_threshold}" "id:${WAF_DETECTION_AUDIT_RULE_ID},phase:5,pass,nolog,chain"`,
    '    SecRule TX:BLOCKING_OUTBOUND_ANOMALY_SCORE "@lt %{tx.outbound_anomaly_score_threshold}" "ctl:auditEngine=Off"',
  ]
}

/**
 * Request body limits (docs/waf.md). The size limit is Coraza's own (ProcessPartial inspects
 * the first bytes; Reject answers 413); the argument and depth limits are enforced by the
 * proxy's body processors, which read these TX variables. Detection mode never refuses:
 * there a size past the limit is inspected in part and a refused body is only logged.
 */
function _bodyLimitDirectives(w: EffectiveWaf, blocking: boolean): string[] {
  const refuseSize = w.limitAction === 'refuse' && blocking
  const lines = [
    `SecRequestBodyLimit ${w.bodyLimitBytes}`,
    // Coraza refuses a limit below the recommended file's in-memory buffer (128 KiB).
    `SecRequestBodyInMemoryLimit ${Math.min(w.bodyLimitBytes, 131_072)}`,
    `SecRequestBodyLimitAction ${refuseSize ? 'Reject' : 'ProcessPartial'}`,
  ]
  if (w.maxArgs || w.jsonMaxDepth) {
    lines.push(
      `SecAction "id:${WAF_BODY_LIMITS_RULE_ID},phase:1,pass,nolog,setvar:tx.edge_body_max_args=${w.maxArgs},setvar:tx.edge_json_max_depth=${w.jsonMaxDepth},setvar:tx.edge_body_limit_action=${w.limitAction}"`,
    )
  }
  // A chunked body declares no length: it is read up to the limit and inspected in part.
  if (w.limitAction === 'pass')
    lines.push(
      `SecRule REQUEST_HEADERS:Content-Length "@gt ${w.bodyLimitBytes}" "id:${WAF_BODY_PASS_RULE_ID},phase:1,pass,nolog,ctl:requestBodyAccess=Off"`,
    )
  if (w.limitAction === 'refuse' && (w.maxArgs || w.jsonMaxDepth)) {
    // Scored too, so that detection mode logs what blocking mode would have refused.
    lines.push(
      `SecRule TX:edge_body_over_limit "@rx ." "id:${WAF_BODY_REFUSE_RULE_ID},phase:2,deny,status:413,log,msg:'Request body over the host limit of ${w.maxArgs || 'any'} arguments or depth ${w.jsonMaxDepth || 'any'}',logdata:'over the %{tx.edge_body_over_limit} limit',severity:'CRITICAL',setvar:'tx.inbound_anomaly_score_pl1=+%{tx.critical_anomaly_score}'"`,
    )
  }
  return lines
}

/** `|a| |b|`: the form CRS 920420 compares with `@within`. */
function _contentTypeDirectives(types: string[] | null): string[] {
  if (types === null) return []
  for (const t of types)
    if (!CONTENT_TYPE_PATTERN.test(t)) throw new Error(`unsafe content type refused in WAF directives: ${JSON.stringify(t)}`)
  // An empty list allows nothing: CRS 920420 then refuses every request that names a type.
  const list = types.map((t) => `|${t}|`).join(' ')
  return [`SecAction "id:${WAF_CONTENT_TYPES_RULE_ID},phase:1,pass,nolog,setvar:'tx.allowed_request_content_type=${list}'"`]
}

/** The exclusion's ctl actions: the rule off, or the argument's value and name off for it (the CRS inspects ARGS and ARGS_NAMES alike). */
function _exclusionControl(e: WafExclusionSnapshot): string {
  return e.argument === null
    ? `ctl:ruleRemoveById=${e.rule_id}`
    : `ctl:ruleRemoveTargetById=${e.rule_id};ARGS:${e.argument},ctl:ruleRemoveTargetById=${e.rule_id};ARGS_NAMES:${e.argument}`
}

/** SecLang operator matching an exclusion's path (a trailing * makes it a prefix). */
function _exclusionPathOperator(path: string): string {
  return path.endsWith('*') ? `@beginsWith ${path.slice(0, -1)}` : `@streq ${path}`
}

/**
 * An exclusion that is not for the whole host runs as a phase-1 rule placed before the CRS,
 * so it takes effect before the excluded rule is evaluated.
 */
function _runtimeExclusion(e: WafExclusionSnapshot): string {
  const actions = `id:${WAF_EXCLUSION_RULE_BASE + e.id},phase:1,pass,nolog,${_exclusionControl(e)}`
  if (e.path === null) return `SecAction "${actions}"`
  return `SecRule REQUEST_FILENAME "${_exclusionPathOperator(e.path)}" "${actions}"`
}

/** The request header panel_waf sets to the host's mark (deploy/proxy/caddy/wafext/shared.go). */
export const WAF_HOST_MARK_HEADER = 'X-Panel-Waf-Host'

/**
 * An exclusion in a text several hosts share: guarded by its host's mark, which panel_waf
 * writes into the request (replacing the client's) before the WAF inspects it. The ctl
 * actions sit on the last rule of the chain: Coraza runs a chain head's own non-disruptive
 * actions even when the chain fails.
 */
function _markedExclusion(e: WafExclusionSnapshot): string {
  const id = WAF_EXCLUSION_RULE_BASE + e.id
  const mark = `SecRule REQUEST_HEADERS:${WAF_HOST_MARK_HEADER} "@streq ${e.host_id}"`
  if (e.path === null) return `${mark} "id:${id},phase:1,pass,nolog,${_exclusionControl(e)}"`
  return `${mark} "id:${id},phase:1,pass,nolog,chain"\nSecRule REQUEST_FILENAME "${_exclusionPathOperator(e.path)}" "${_exclusionControl(e)}"`
}

/** Rule id ranges to remove from the family files so that only `keep` stays. */
function _removalRanges(keep: number[]): string {
  const byFile = new Map<number, number[]>()
  for (const id of [...new Set(keep)].sort((a, b) => a - b))
    byFile.set(Math.floor(id / 1000), [...(byFile.get(Math.floor(id / 1000)) ?? []), id])
  const ranges: string[] = []
  for (const [file, ids] of [...byFile].sort((a, b) => a[0] - b[0])) {
    let from = file * 1000
    for (const id of ids) {
      if (id > from) ranges.push(`${from}-${id - 1}`)
      from = id + 1
    }
    ranges.push(`${from}-${file * 1000 + 999}`)
  }
  return ranges.join(' ')
}

/**
 * The fast profile: the CRS's initialisation and blocking evaluation around the few rules of
 * the host's families (and the content-type policy, 920420), every other rule of their
 * files removed at load so that it costs nothing per request.
 */
function _fastProfileRules(families: string[]): string[] {
  const keep = [...WAF_FAST_BASE_RULE_IDS, ...WAF_FAMILIES.filter((f) => families.includes(f.id)).flatMap((f) => f.crsRuleIds)]
  const files = [...new Set(keep.map((id) => Math.floor(id / 1000)))].sort((a, b) => a - b)
  return [
    'Include @owasp_crs/REQUEST-901-INITIALIZATION.conf',
    ...files.map((f) => `Include @owasp_crs/${CRS_FILES[f]}`),
    `SecRuleRemoveById ${_removalRanges(keep)}`,
    'Include @owasp_crs/REQUEST-949-BLOCKING-EVALUATION.conf',
  ]
}

type WafSettings = Pick<ProxySnapshot, 'waf' | 'logDir'> & Partial<Pick<ProxySnapshot, 'modules' | 'hosts'>>

/**
 * Coraza with the OWASP CRS, in one of two profiles (docs/waf.md): `full` loads every CRS
 * rule file; `fast` keeps the rules of the host's families. Both carry the panel's virtual
 * patches, the host's body limits, content types and rule exclusions. Thresholds are set
 * before the CRS rules read them (A2).
 *
 * With panel_waf (deploy/proxy/caddy/wafext/shared.go) hosts whose directive text is the
 * same share one compiled WAF. Everything a host differs in is in that text, so no setting
 * reaches another host, except exclusions: hosts that differ only in them get one text
 * carrying all their exclusions, each guarded by its host's mark (`host_mark`), so an
 * exclusion costs a rule, not a compiled copy of the CRS. A proxy without the module gets
 * coraza-caddy's handler, one WAF each, with the host's own exclusions only.
 */
export function buildWafHandler(
  host: WafHost & Pick<HostSnapshot, 'id'>,
  snapshot: WafSettings,
  exclusions: WafExclusionSnapshot[] = [],
): Json {
  const own = _ownExclusions(host.id, exclusions)
  if (!snapshot.modules?.includes('wafshare')) {
    const wholeRuleIds = own.filter((e) => e.path === null && e.argument === null).map((e) => e.rule_id)
    const runtime = own.filter((e) => e.path !== null || e.argument !== null).map(_runtimeExclusion)
    return { handler: 'waf', load_owasp_crs: true, directives: _wafDirectives(host, snapshot, runtime, wholeRuleIds).join('\n') }
  }
  const base = _wafDirectives(host, snapshot, [], []).join('\n')
  const sharing = _exclusionsByBaseText(snapshot, exclusions).get(base) ?? own
  const directives = _wafDirectives(host, snapshot, sharing.map(_markedExclusion), []).join('\n')
  return { handler: 'panel_waf', load_owasp_crs: true, directives, ...(own.length ? { host_mark: String(host.id) } : {}) }
}

function _ownExclusions(hostId: number, exclusions: WafExclusionSnapshot[]): WafExclusionSnapshot[] {
  const own = exclusions.filter((e) => e.host_id === hostId).sort((a, b) => a.id - b.id)
  own.forEach(_assertSafeExclusion)
  return own
}

const _groupsBySnapshot = new WeakMap<object, Map<string, WafExclusionSnapshot[]>>()

/** For each text without exclusions, the exclusions of every WAF host with that text (once per build). */
function _exclusionsByBaseText(snapshot: WafSettings, exclusions: WafExclusionSnapshot[]): Map<string, WafExclusionSnapshot[]> {
  const known = _groupsBySnapshot.get(snapshot)
  if (known) return known
  const groups = new Map<string, WafExclusionSnapshot[]>()
  const excluding = new Set(exclusions.map((e) => e.host_id))
  for (const h of snapshot.hosts ?? []) {
    if (!h.waf_enabled || !excluding.has(h.id)) continue
    const base = _wafDirectives(h, snapshot, [], []).join('\n')
    groups.set(
      base,
      [...(groups.get(base) ?? []), ..._ownExclusions(h.id, exclusions)].sort((a, b) => a.id - b.id),
    )
  }
  _groupsBySnapshot.set(snapshot, groups)
  return groups
}

/** The directive text: `exclusionRules` before the CRS, `wholeRuleIds` removed after it. */
function _wafDirectives(host: WafHost, snapshot: WafSettings, exclusionRules: string[], wholeRuleIds: number[]): string[] {
  const auditLog = `${snapshot.logDir}/waf-audit.log`
  _assertSafeDirectivePath(auditLog)
  const w = resolveEffectiveWaf(host)
  const inbound = Math.trunc(snapshot.waf.inboundThreshold)
  const outbound = Math.trunc(snapshot.waf.outboundThreshold)
  const blocking = host.waf_mode === 'blocking'
  return [
    'Include @coraza.conf-recommended',
    // Fast: no response inspection (the CRS's outbound rules are not loaded), no response buffering.
    ...(w.profile === 'fast' ? ['SecResponseBodyAccess Off'] : []),
    ..._bodyLimitDirectives(w, blocking),
    // CRS 901100/901110 set the thresholds only when unset, so this phase-1 action must come first.
    `SecAction "id:${WAF_THRESHOLD_RULE_ID},phase:1,pass,nolog,setvar:tx.inbound_anomaly_score_threshold=${inbound},setvar:tx.outbound_anomaly_score_threshold=${outbound}"`,
    ..._contentTypeDirectives(w.contentTypes),
    ...exclusionRules,
    'Include @crs-setup.conf.example',
    ...WAF_VIRTUAL_PATCHES.map((p) => p.rule),
    ...(w.profile === 'full' ? ['Include @owasp_crs/*.conf'] : _fastProfileRules(w.families)),
    // A whole rule off for the host: removed at load, after every file that defines rules.
    ...(wholeRuleIds.length ? [`SecRuleRemoveById ${[...new Set(wholeRuleIds)].join(' ')}`] : []),
    // After the recommended file, which says DetectionOnly: the last SecRuleEngine wins.
    blocking ? 'SecRuleEngine On' : 'SecRuleEngine DetectionOnly',
    // Blocking: the recommended selection (interrupted = 403, and 4xx/5xx answers with a match).
    'SecAuditEngine RelevantOnly',
    ...(blocking ? [] : _detectionAuditDirectives()),
    // K: matched rules as structured data (rule id, severity) for the log ingester.
    'SecAuditLogParts ABIJDEFHKZ',
    'SecAuditLogType Serial',
    'SecAuditLogFormat JSON',
    `SecAuditLog ${auditLog}`,
  ]
}
