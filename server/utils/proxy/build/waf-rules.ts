// The WAF's catalogues, as data: profiles and their defaults, the CRS rule families the
// fast profile can keep, the panel's own virtual patches, the CRS's default content types.
// One declaration drives validation (server/utils/hosts/schemas.ts), the builder (waf.ts),
// the OpenAPI enums and the host form.

export const WAF_PROFILES = ['fast', 'full'] as const
export type WafProfile = (typeof WAF_PROFILES)[number]

export const WAF_LIMIT_ACTIONS = ['partial', 'pass', 'refuse'] as const
export type WafLimitAction = (typeof WAF_LIMIT_ACTIONS)[number]

/**
 * What a profile does with a setting the host leaves empty (null). `full` keeps what the
 * WAF did before profiles existed (Coraza's recommended 12.5 MiB body limit, refused past
 * it, no argument or depth limit); `fast` bounds the work a body can cost by its size and
 * depth only. It has no argument limit: a count past which values go uninspected let an
 * injection through behind padding, and every value of 16 KiB costs little (docs/waf.md).
 * 0 = no limit.
 */
export const WAF_PROFILE_DEFAULTS: Record<
  WafProfile,
  { bodyLimitKb: number; maxArgs: number; jsonMaxDepth: number; limitAction: WafLimitAction }
> = {
  full: { bodyLimitKb: 12_800, maxArgs: 0, jsonMaxDepth: 0, limitAction: 'refuse' },
  fast: { bodyLimitKb: 16, maxArgs: 0, jsonMaxDepth: 16, limitAction: 'partial' },
}

/** Bounds the API accepts for the limits (KiB, count, levels). */
export const WAF_LIMIT_BOUNDS = { bodyLimitKb: [1, 1_048_576], maxArgs: [1, 100_000], jsonMaxDepth: [1, 1_000] } as const

export interface WafFamily {
  id: string
  label: string
  /** CRS 4.15 rules (paranoia level 1) kept by the fast profile; every other rule of their files is removed. */
  crsRuleIds: number[]
}

/**
 * The CRS rule families the fast profile can keep, chosen per host by what the host runs.
 * Each keeps a few paranoia-level-1 rules of its CRS file, picked for what they catch
 * against what they cost on a JSON body (docs/waf.md has the measured cost of each).
 */
export const WAF_FAMILIES: readonly WafFamily[] = [
  { id: 'sqli', label: 'SQL injection (libinjection, CRS 942100)', crsRuleIds: [942100] },
  { id: 'xss', label: 'cross-site scripting (libinjection, CRS 941100)', crsRuleIds: [941100] },
  { id: 'lfi', label: 'path traversal and OS files (CRS 930100-930130)', crsRuleIds: [930100, 930110, 930120, 930130] },
  { id: 'rce', label: 'Unix shell code and Shellshock (CRS 932160, 932170, 932171)', crsRuleIds: [932160, 932170, 932171] },
  { id: 'php', label: 'PHP tags, directives, streams and uploads (CRS 933100-933140)', crsRuleIds: [933100, 933110, 933120, 933140] },
  {
    id: 'java',
    label: 'Java classes, process spawn and Log4Shell (CRS 944100, 944110, 944150-944152)',
    crsRuleIds: [944100, 944110, 944150, 944151, 944152],
  },
  { id: 'protocol', label: 'request smuggling and response splitting (CRS 921110-921130)', crsRuleIds: [921110, 921120, 921130] },
] as const
export const WAF_FAMILY_IDS = WAF_FAMILIES.map((f) => f.id)
export const WAF_DEFAULT_FAMILIES = ['sqli', 'xss']

/** Kept by the fast profile whatever the families: the host's content-type policy (the setting below). */
export const WAF_FAST_BASE_RULE_IDS = [920420]

/** Which CRS file holds a rule: its first three digits. */
export const CRS_FILES: Record<number, string> = {
  920: 'REQUEST-920-PROTOCOL-ENFORCEMENT.conf',
  921: 'REQUEST-921-PROTOCOL-ATTACK.conf',
  930: 'REQUEST-930-APPLICATION-ATTACK-LFI.conf',
  932: 'REQUEST-932-APPLICATION-ATTACK-RCE.conf',
  933: 'REQUEST-933-APPLICATION-ATTACK-PHP.conf',
  941: 'REQUEST-941-APPLICATION-ATTACK-XSS.conf',
  942: 'REQUEST-942-APPLICATION-ATTACK-SQLI.conf',
  944: 'REQUEST-944-APPLICATION-ATTACK-JAVA.conf',
}

/** CRS 4.15's tx.allowed_request_content_type (rule 901162), used when a host sets none. */
export const CRS_DEFAULT_CONTENT_TYPES = [
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'text/xml',
  'application/xml',
  'application/soap+xml',
  'application/json',
] as const

/** A media type as CRS compares it (920420 lower-cases the header up to the first ";"). */
export const CONTENT_TYPE_PATTERN = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/

export interface VirtualPatch {
  id: number
  cve: string
  title: string
  rule: string
}

const _score = "setvar:'tx.inbound_anomaly_score_pl1=+%{tx.critical_anomaly_score}'"
const _head = (id: number, transforms: string, msg: string) =>
  `id:${id},phase:2,block,t:none${transforms},log,msg:'${msg}',severity:'CRITICAL',tag:'edge-panel/virtual-patch'`
const _patch = (id: number, targets: string, operator: string, transforms: string, msg: string) =>
  `SecRule ${targets} "${operator}" "${_head(id, transforms, msg)},capture,logdata:'Matched Data: %{TX.0} found within %{MATCHED_VAR_NAME}',${_score}"`
/**
 * A patch over every argument starts with a plain substring search, which costs no regex
 * call on clean input (each argument is a match per rule); the regex runs on what it found.
 */
const _prefilteredPatch = (id: number, targets: string, literal: string, regex: string, msg: string) =>
  `SecRule ${targets} "@contains ${literal}" "${_head(id, '', msg)},logdata:'Matched Data: %{MATCHED_VAR} found within %{MATCHED_VAR_NAME}',chain"\n` +
  `    SecRule MATCHED_VARS "@rx ${regex}" "${_score}"`

/**
 * Virtual patches: narrow rules for exploited CVEs, in both profiles, scored like CRS
 * critical rules (so thresholds, detection mode and exclusions treat them alike). Phase 2:
 * the CRS initialises the scores in phase 1. Narrow targets keep them cheap on large bodies.
 */
export const WAF_VIRTUAL_PATCHES: readonly VirtualPatch[] = [
  {
    id: 9990201,
    cve: 'CVE-2021-44228, CVE-2021-45046',
    title: 'Log4Shell JNDI lookup',
    // Arguments arrive decoded once, as an application logs them; the path is decoded (REQUEST_FILENAME).
    // HTML-entity spellings (&dollar;{) are the java family's (CRS 944150).
    rule: _prefilteredPatch(
      9990201,
      'REQUEST_FILENAME|REQUEST_HEADERS|ARGS',
      '${',
      '(?i)\\$\\{(?:[^}]{0,15}\\$\\{|jndi|ctx)',
      'Log4Shell lookup (CVE-2021-44228)',
    ),
  },
  {
    id: 9990202,
    cve: 'CVE-2022-22965',
    title: 'Spring4Shell class loader manipulation',
    // Spring binds properties case-sensitively: the exploit needs "class" in lower case.
    rule: _prefilteredPatch(
      9990202,
      'ARGS_NAMES|REQUEST_COOKIES_NAMES',
      'class',
      '(?i)(?:^|[.\\[])class\\s*[.\\[]\\s*(?:module|classloader|protectiondomain)',
      'Spring4Shell class loader access (CVE-2022-22965)',
    ),
  },
  {
    id: 9990203,
    cve: 'CVE-2014-6271',
    title: 'Shellshock function definition in a header',
    rule: _patch(
      9990203,
      'REQUEST_HEADERS|REQUEST_LINE',
      '@rx ^\\(\\s*\\)\\s+\\{',
      ',t:urlDecode',
      'Shellshock function definition (CVE-2014-6271)',
    ),
  },
  {
    id: 9990204,
    cve: 'CVE-2021-41773, CVE-2021-42013',
    title: 'Encoded dot segments (Apache HTTP Server path traversal)',
    rule: _patch(
      9990204,
      'REQUEST_URI_RAW',
      '@rx (?i)(?:/|%2f)(?:\\.|%2e|%%32%65){2}(?:/|%2f|$)',
      '',
      'Encoded path traversal (CVE-2021-41773)',
    ),
  },
  {
    id: 9990205,
    cve: 'CVE-2024-4577, CVE-2012-1823',
    title: 'PHP-CGI options in the query string',
    rule: _patch(
      9990205,
      'QUERY_STRING',
      '@rx (?i)^(?:-|%2d|%ad)+[dsbnf](?:\\+|%20|\\s)*[a-z_.]+(?:=|%3d)',
      '',
      'PHP-CGI argument injection (CVE-2024-4577)',
    ),
  },
  {
    id: 9990206,
    cve: 'CVE-2022-26134',
    title: 'OGNL expression in the path (Confluence)',
    rule: _patch(9990206, 'REQUEST_FILENAME', '@rx \\$\\{', ',t:urlDecodeUni', 'OGNL injection in the path (CVE-2022-26134)'),
  },
  {
    id: 9990207,
    cve: 'CVE-2019-19781',
    title: 'Citrix ADC path traversal to /vpns/',
    rule: _patch(
      9990207,
      'REQUEST_FILENAME',
      '@rx (?i)/vpns?/.*\\.\\./|\\.\\./vpns/',
      ',t:urlDecodeUni',
      'Citrix ADC path traversal (CVE-2019-19781)',
    ),
  },
] as const

/** An exclusion's path as the WAF sees it (decoded, no query); a trailing * makes it a prefix. Spliced into SecLang. */
export const WAF_EXCLUSION_PATH = /^\/[A-Za-z0-9\-._~/!$&'()+,;=:@%]*\*?$/
/** An argument name as the WAF names it (q, json.items.0.name, user[name]). Spliced into a ctl action. */
export const WAF_EXCLUSION_ARGUMENT = /^[A-Za-z0-9_.\-[\]]{1,200}$/

/** The panel's control rules (ids 9990100-9990199) that an exclusion may not remove. */
export const WAF_CONTROL_RULE_RANGE = [9990100, 9990199] as const
