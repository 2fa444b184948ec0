import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { buildForwardAuthHeaderStripHandler } from '../../server/utils/proxy/build/forward-auth'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import {
  WAF_BODY_LIMITS_RULE_ID,
  WAF_BODY_PASS_RULE_ID,
  WAF_BODY_REFUSE_RULE_ID,
  WAF_CONTENT_TYPES_RULE_ID,
  WAF_DETECTION_AUDIT_RULE_ID,
  WAF_EXCLUSION_RULE_BASE,
  WAF_THRESHOLD_RULE_ID,
  buildWafHandler,
  resolveEffectiveWaf,
} from '../../server/utils/proxy/build/waf'
import { WAF_FAMILIES, WAF_PROFILE_DEFAULTS, WAF_VIRTUAL_PATCHES } from '../../server/utils/proxy/build/waf-rules'
import type { HostSnapshot, WafExclusionSnapshot } from '../../server/utils/proxy/build/types'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const settings = { waf: { inboundThreshold: 10, outboundThreshold: 8 }, logDir: '/var/log/panel' }
const host = (o: Partial<HostSnapshot> = {}) => buildHostSnapshot({ waf_enabled: true, waf_mode: 'blocking', ...o })
const linesOf = (o: Partial<HostSnapshot> = {}, exclusions: WafExclusionSnapshot[] = []) =>
  (buildWafHandler(host(o), settings, exclusions).directives as string).split('\n')
const exclusion = (o: Partial<WafExclusionSnapshot>): WafExclusionSnapshot => ({
  id: 1,
  host_id: 1,
  rule_id: 942100,
  path: null,
  argument: null,
  ...o,
})
const PATCHES = WAF_VIRTUAL_PATCHES.flatMap((p) => p.rule.split('\n'))
const TAIL = ['SecAuditLogParts ABIJDEFHKZ', 'SecAuditLogType Serial', 'SecAuditLogFormat JSON', 'SecAuditLog /var/log/panel/waf-audit.log']
const THRESHOLDS = `SecAction "id:${WAF_THRESHOLD_RULE_ID},phase:1,pass,nolog,setvar:tx.inbound_anomaly_score_threshold=10,setvar:tx.outbound_anomaly_score_threshold=8"`

describe('buildWafHandler — full profile', () => {
  it('is the Coraza handler with the embedded CRS', () => {
    const h = buildWafHandler(host(), settings)
    expect(h.handler).toBe('waf')
    expect(h.load_owasp_crs).toBe(true)
    expect(h.include).toBeUndefined() // deprecated key
  })

  it("blocking: the exact directive list, today's body limit (12.5 MiB, refused past it), thresholds before the CRS, engine On after the recommended file", () => {
    expect(linesOf()).toEqual([
      'Include @coraza.conf-recommended',
      'SecRequestBodyLimit 13107200',
      'SecRequestBodyInMemoryLimit 131072',
      'SecRequestBodyLimitAction Reject',
      THRESHOLDS,
      'Include @crs-setup.conf.example',
      ...PATCHES,
      'Include @owasp_crs/*.conf',
      'SecRuleEngine On',
      'SecAuditEngine RelevantOnly',
      ...TAIL,
    ])
  })

  it('detection: DetectionOnly, a body past the limit inspected in part (never refused), the audit selection of what blocking would block', () => {
    expect(linesOf({ waf_mode: 'detection' })).toEqual([
      'Include @coraza.conf-recommended',
      'SecRequestBodyLimit 13107200',
      'SecRequestBodyInMemoryLimit 131072',
      'SecRequestBodyLimitAction ProcessPartial',
      THRESHOLDS,
      'Include @crs-setup.conf.example',
      ...PATCHES,
      'Include @owasp_crs/*.conf',
      'SecRuleEngine DetectionOnly',
      'SecAuditEngine RelevantOnly',
      'SecAuditLogRelevantStatus ".*"',
      `SecRule TX:BLOCKING_INBOUND_ANOMALY_SCORE "@lt %{tx.inbound_anomaly_score_threshold}" "id:${WAF_DETECTION_AUDIT_RULE_ID},phase:5,pass,nolog,chain"`,
      '    SecRule TX:BLOCKING_OUTBOUND_ANOMALY_SCORE "@lt %{tx.outbound_anomaly_score_threshold}" "ctl:auditEngine=Off"',
      ...TAIL,
    ])
  })

  it('blocking keeps the recommended audit selection (no status override, no logging-phase rule)', () => {
    const blocking = linesOf().join('\n')
    expect(blocking).not.toContain('SecAuditLogRelevantStatus')
    expect(blocking).not.toContain(String(WAF_DETECTION_AUDIT_RULE_ID))
  })

  it('uses ids of its own, not CRS ones (900110 would be a duplicate id), all distinct', () => {
    const ids = [
      WAF_THRESHOLD_RULE_ID,
      WAF_DETECTION_AUDIT_RULE_ID,
      WAF_CONTENT_TYPES_RULE_ID,
      WAF_BODY_LIMITS_RULE_ID,
      WAF_BODY_PASS_RULE_ID,
      WAF_BODY_REFUSE_RULE_ID,
      ...WAF_VIRTUAL_PATCHES.map((p) => p.id),
    ]
    expect(new Set(ids).size).toBe(ids.length)
    for (const id of ids) expect(String(id)).toMatch(/^999\d{4}$/)
  })

  it('refuses a log directory that would break out of the directive', () => {
    for (const logDir of ['/var/log/my logs', '/var/log/x\nSecRuleEngine Off', '/var/log/"x'])
      expect(() => buildWafHandler(host(), { ...settings, logDir })).toThrow(/unsafe path/)
  })
})

describe('buildWafHandler — fast profile', () => {
  it('loads the CRS initialisation and blocking evaluation around the kept rules only, and no response inspection', () => {
    const lines = linesOf({ waf_profile: 'fast', waf_families: ['xss', 'sqli'] })
    expect(lines.slice(0, 2)).toEqual(['Include @coraza.conf-recommended', 'SecResponseBodyAccess Off'])
    const crs = lines.slice(lines.indexOf('Include @crs-setup.conf.example') + 1 + PATCHES.length, lines.indexOf('SecRuleEngine On'))
    expect(crs).toEqual([
      'Include @owasp_crs/REQUEST-901-INITIALIZATION.conf',
      'Include @owasp_crs/REQUEST-920-PROTOCOL-ENFORCEMENT.conf',
      'Include @owasp_crs/REQUEST-941-APPLICATION-ATTACK-XSS.conf',
      'Include @owasp_crs/REQUEST-942-APPLICATION-ATTACK-SQLI.conf',
      // 920420 (content-type policy), 941100 and 942100 stay; every other rule of those files goes.
      'SecRuleRemoveById 920000-920419 920421-920999 941000-941099 941101-941999 942000-942099 942101-942999',
      'Include @owasp_crs/REQUEST-949-BLOCKING-EVALUATION.conf',
    ])
    expect(lines.join('\n')).not.toContain('@owasp_crs/*.conf')
  })

  it('several rules of one file leave the gaps between them', () => {
    const removal = linesOf({ waf_profile: 'fast', waf_families: ['lfi'] }).find((l) => l.startsWith('SecRuleRemoveById'))
    expect(removal).toBe(
      'SecRuleRemoveById 920000-920419 920421-920999 930000-930099 930101-930109 930111-930119 930121-930129 930131-930999',
    )
  })

  it('every family names CRS rules of a file the builder knows, and the same families in any order build the same text', () => {
    for (const f of WAF_FAMILIES) for (const id of f.crsRuleIds) expect(id).toBeGreaterThanOrEqual(920000)
    const all = WAF_FAMILIES.map((f) => f.id)
    expect(linesOf({ waf_profile: 'fast', waf_families: all })).toEqual(linesOf({ waf_profile: 'fast', waf_families: [...all].reverse() }))
  })

  it("bounds the body by default by size and depth only: 16 KiB inspected in part, every value, depth 16, handed to the proxy's body processors", () => {
    const lines = linesOf({ waf_profile: 'fast' })
    expect(lines).toContain('SecRequestBodyLimit 16384')
    expect(lines).toContain('SecRequestBodyInMemoryLimit 16384')
    expect(lines).toContain('SecRequestBodyLimitAction ProcessPartial')
    // 0: the body processors collect every value (deploy/proxy/caddy/wafext/bodies.go).
    expect(lines).toContain(
      `SecAction "id:${WAF_BODY_LIMITS_RULE_ID},phase:1,pass,nolog,setvar:tx.edge_body_max_args=0,setvar:tx.edge_json_max_depth=16,setvar:tx.edge_body_limit_action=partial"`,
    )
    expect(lines.join('\n')).not.toContain(String(WAF_BODY_REFUSE_RULE_ID))
  })

  it('carries the virtual patches, as the full profile does', () => {
    const text = linesOf({ waf_profile: 'fast' }).join('\n')
    for (const p of WAF_VIRTUAL_PATCHES) {
      expect(text).toContain(p.rule)
      expect(p.rule).toMatch(new RegExp(`"id:${p.id},phase:2,block,`))
      expect(p.rule).toContain("severity:'CRITICAL'")
    }
  })
})

describe('resolveEffectiveWaf — profile defaults and host overrides', () => {
  const cases: Array<{ o: Partial<HostSnapshot>; want: Partial<ReturnType<typeof resolveEffectiveWaf>> }> = [
    {
      o: {},
      want: {
        profile: 'full',
        bodyLimitBytes: WAF_PROFILE_DEFAULTS.full.bodyLimitKb * 1024,
        maxArgs: 0,
        jsonMaxDepth: 0,
        limitAction: 'refuse',
        contentTypes: null,
      },
    },
    { o: { waf_profile: 'fast' }, want: { bodyLimitBytes: 16 * 1024, maxArgs: 0, jsonMaxDepth: 16, limitAction: 'partial' } },
    // A host that chose a limit keeps it (a stored number is never replaced by the default).
    { o: { waf_profile: 'fast', waf_body_max_args: 256 }, want: { maxArgs: 256, limitAction: 'partial' } },
    {
      o: { waf_profile: 'fast', waf_body_limit_kb: 64, waf_body_max_args: 1000, waf_json_max_depth: 4, waf_body_limit_action: 'refuse' },
      want: { bodyLimitBytes: 65536, maxArgs: 1000, jsonMaxDepth: 4, limitAction: 'refuse' },
    },
    { o: { waf_families: ['rce', 'nonsense', 'sqli'] }, want: { families: ['sqli', 'rce'] } },
    { o: { waf_allowed_content_types: ['text/plain'] }, want: { contentTypes: ['text/plain'] } },
  ]
  it.each(cases)('$o', ({ o, want }) => expect(resolveEffectiveWaf(host(o))).toMatchObject(want))
})

describe('buildWafHandler — body limit actions', () => {
  it('pass: a body declared larger than the limit is not read; limits handed over with action pass', () => {
    const lines = linesOf({ waf_body_limit_kb: 8, waf_body_max_args: 10, waf_body_limit_action: 'pass' })
    expect(lines).toContain('SecRequestBodyLimitAction ProcessPartial')
    expect(lines).toContain(
      `SecRule REQUEST_HEADERS:Content-Length "@gt 8192" "id:${WAF_BODY_PASS_RULE_ID},phase:1,pass,nolog,ctl:requestBodyAccess=Off"`,
    )
    expect(lines).toContain(
      `SecAction "id:${WAF_BODY_LIMITS_RULE_ID},phase:1,pass,nolog,setvar:tx.edge_body_max_args=10,setvar:tx.edge_json_max_depth=0,setvar:tx.edge_body_limit_action=pass"`,
    )
  })

  it('refuse: size refused by Coraza (413) in blocking mode, argument/depth refused by a scored rule (logged in detection mode)', () => {
    const blocking = linesOf({ waf_json_max_depth: 8, waf_body_limit_action: 'refuse' })
    expect(blocking).toContain('SecRequestBodyLimitAction Reject')
    const refuse = blocking.find((l) => l.includes(`id:${WAF_BODY_REFUSE_RULE_ID},`))!
    expect(refuse).toMatch(/^SecRule TX:edge_body_over_limit "@rx \." "id:9990132,phase:2,deny,status:413,/)
    expect(refuse).toContain("setvar:'tx.inbound_anomaly_score_pl1=+%{tx.critical_anomaly_score}'")
    const detection = linesOf({ waf_mode: 'detection', waf_json_max_depth: 8, waf_body_limit_action: 'refuse' })
    expect(detection).toContain('SecRequestBodyLimitAction ProcessPartial')
    expect(detection.some((l) => l.includes(`id:${WAF_BODY_REFUSE_RULE_ID},`))).toBe(true)
  })

  it("no argument or depth limit: nothing handed to the body processors (Coraza's own behaviour)", () => {
    expect(linesOf().join('\n')).not.toContain('edge_body')
  })
})

describe('buildWafHandler — allowed content types', () => {
  it("the host's list replaces the CRS default before CRS 901 reads it; none set: the CRS default", () => {
    const lines = linesOf({ waf_allowed_content_types: ['application/json', 'text/plain'] })
    const set = `SecAction "id:${WAF_CONTENT_TYPES_RULE_ID},phase:1,pass,nolog,setvar:'tx.allowed_request_content_type=|application/json| |text/plain|'"`
    expect(lines).toContain(set)
    expect(lines.indexOf(set)).toBeLessThan(lines.indexOf('Include @owasp_crs/*.conf'))
    expect(linesOf().join('\n')).not.toContain('allowed_request_content_type')
  })

  it('refuses a type that would break the list or the directive', () => {
    for (const t of ['text/plain|x', "text/plain'", 'text/plain; charset=utf-8', 'TEXT'])
      expect(() => buildWafHandler(host({ waf_allowed_content_types: [t] }), settings)).toThrow(/unsafe content type/)
  })
})

describe('buildWafHandler — rule exclusions', () => {
  it('a whole rule for the host is removed at load, after the CRS files', () => {
    const lines = linesOf({}, [exclusion({ id: 3, rule_id: 920420 }), exclusion({ id: 4, rule_id: 942100 })])
    expect(lines.indexOf('SecRuleRemoveById 920420 942100')).toBeGreaterThan(lines.indexOf('Include @owasp_crs/*.conf'))
  })

  it('a path, a prefix, an argument, or both: a phase-1 rule of its own placed before the CRS', () => {
    const lines = linesOf({}, [
      exclusion({ id: 1, rule_id: 920420, path: '/hooks/github' }),
      exclusion({ id: 2, rule_id: 942100, path: '/api/*' }),
      exclusion({ id: 3, rule_id: 941100, argument: 'json.body' }),
      exclusion({ id: 4, rule_id: 942100, path: '/search', argument: 'q' }),
    ])
    const id = (n: number) => WAF_EXCLUSION_RULE_BASE + n
    const expected = [
      `SecRule REQUEST_FILENAME "@streq /hooks/github" "id:${id(1)},phase:1,pass,nolog,ctl:ruleRemoveById=920420"`,
      `SecRule REQUEST_FILENAME "@beginsWith /api/" "id:${id(2)},phase:1,pass,nolog,ctl:ruleRemoveById=942100"`,
      `SecAction "id:${id(3)},phase:1,pass,nolog,ctl:ruleRemoveTargetById=941100;ARGS:json.body,ctl:ruleRemoveTargetById=941100;ARGS_NAMES:json.body"`,
      `SecRule REQUEST_FILENAME "@streq /search" "id:${id(4)},phase:1,pass,nolog,ctl:ruleRemoveTargetById=942100;ARGS:q,ctl:ruleRemoveTargetById=942100;ARGS_NAMES:q"`,
    ]
    for (const e of expected) expect(lines.indexOf(e)).toBeLessThan(lines.indexOf('Include @crs-setup.conf.example'))
    expect(lines.filter((l) => expected.includes(l))).toEqual(expected)
    expect(lines.join('\n')).not.toMatch(/^SecRuleRemoveById \d+$/m)
  })

  it("another host's exclusions are not this host's", () => {
    expect(linesOf({}, [exclusion({ host_id: 2, rule_id: 920420 })])).toEqual(linesOf())
  })

  it("refuses values that would inject into SecLang, and the panel's control rules", () => {
    for (const bad of [
      exclusion({ path: '/a b' }),
      exclusion({ path: '/a"' }),
      exclusion({ path: '/%{tx.x}' }),
      exclusion({ argument: 'a;b' }),
      exclusion({ argument: 'a,ctl:ruleEngine=Off' }),
      exclusion({ rule_id: WAF_THRESHOLD_RULE_ID }),
      exclusion({ rule_id: 0 }),
    ])
      expect(() => buildWafHandler(host(), settings, [bad])).toThrow(/unsafe WAF exclusion/)
  })
})

describe('buildWafHandler — in the host chain', () => {
  it("is emitted for waf_enabled hosts when the proxy has the waf module, with the snapshot's exclusions", () => {
    const wafExclusions = [exclusion({ host_id: 1, rule_id: 920420, path: '/hook' })]
    const { config } = buildProxyConfig(
      buildSnapshot({ modules: ['waf'], ...settings, wafExclusions, hosts: [host(), buildHostSnapshot({ id: 2 })] }),
    )
    expect(hostSubroutes(config, 'host1.example.test')[0].handle).toEqual([
      buildWafHandler(host(), settings, wafExclusions),
      buildForwardAuthHeaderStripHandler(),
    ])
    expect(JSON.stringify(hostSubroutes(config, 'host1.example.test'))).toContain('ctl:ruleRemoveById=920420')
    expect(JSON.stringify(hostSubroutes(config, 'host2.example.test'))).not.toContain('"waf"')
  })

  it('with the wafshare module: hosts that differ only in exclusions share one text, each exclusion under its host mark', () => {
    const wafExclusions = [
      exclusion({ id: 1, host_id: 3, rule_id: 920420, path: '/hook' }),
      exclusion({ id: 2, host_id: 4, rule_id: 942100, path: null }),
    ]
    const hosts = [
      host(),
      host({ id: 2, domain: 'host2.example.test' }),
      host({ id: 3, domain: 'host3.example.test' }),
      host({ id: 4, domain: 'host4.example.test' }),
      host({ id: 5, domain: 'host5.example.test', waf_mode: 'detection' }),
    ]
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['waf', 'wafshare'], ...settings, wafExclusions, hosts }))
    const wafOf = (d: string) => hostSubroutes(config, d)[0].handle[0]
    // The proxy keys its compiled WAFs by this text: one text for the four blocking hosts.
    const text = wafOf('host1.example.test').directives
    for (const d of ['host2', 'host3', 'host4']) expect(wafOf(`${d}.example.test`).directives, d).toBe(text)
    expect(wafOf('host1.example.test')).toEqual({ handler: 'panel_waf', load_owasp_crs: true, directives: text })
    expect(wafOf('host3.example.test').host_mark).toBe('3')
    expect(wafOf('host4.example.test').host_mark).toBe('4')
    expect(wafOf('host2.example.test').host_mark).toBeUndefined()
    const lines = text.split('\n')
    // Each exclusion guarded by its host's mark, before the CRS; the path's ctl on the chained rule.
    const crs = lines.indexOf('Include @crs-setup.conf.example')
    const hook = lines.indexOf('SecRule REQUEST_HEADERS:X-Panel-Waf-Host "@streq 3" "id:10000001,phase:1,pass,nolog,chain"')
    expect(hook).toBeGreaterThan(-1)
    expect(hook).toBeLessThan(crs)
    expect(lines[hook + 1]).toBe('SecRule REQUEST_FILENAME "@streq /hook" "ctl:ruleRemoveById=920420"')
    expect(lines).toContain(
      'SecRule REQUEST_HEADERS:X-Panel-Waf-Host "@streq 4" "id:10000002,phase:1,pass,nolog,ctl:ruleRemoveById=942100"',
    )
    // A whole-rule exclusion is per request here, never removed from the shared rule set at load.
    expect(text).not.toContain('SecRuleRemoveById 942100')
    // Another mode is another text, without the exclusions of hosts it does not share with.
    expect(wafOf('host5.example.test').directives).not.toBe(text)
    expect(wafOf('host5.example.test').directives).not.toContain('X-Panel-Waf-Host')
  })

  it('without the wafshare module: each host carries only its own exclusions, the whole-rule ones removed at load', () => {
    const wafExclusions = [
      exclusion({ id: 1, host_id: 1, rule_id: 942100, path: null }),
      exclusion({ id: 2, host_id: 2, rule_id: 920420, path: '/hook' }),
    ]
    const hosts = [host(), host({ id: 2, domain: 'host2.example.test' })]
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['waf'], ...settings, wafExclusions, hosts }))
    const one = hostSubroutes(config, 'host1.example.test')[0].handle[0]
    expect(one.handler).toBe('waf')
    expect(one.host_mark).toBeUndefined()
    expect(one.directives).toContain('SecRuleRemoveById 942100')
    expect(one.directives).not.toContain('920420')
    expect(one.directives).not.toContain('X-Panel-Waf-Host')
  })

  it('without the waf module: no handler and a warning', () => {
    const r = buildProxyConfig(
      buildSnapshot({ modules: ['ratelimit'], hosts: [buildHostSnapshot({ waf_enabled: true, bouncer_enabled: false })] }),
    )
    expect(JSON.stringify(r.config)).not.toContain('"waf"')
    expect(r.warnings).toEqual(['host host1.example.test: the proxy has no waf module; WAF not applied'])
  })
})

describe('buildWafHandler — the directives the proxy engine benchmark runs', () => {
  // deploy/proxy/caddy/wafext/engine_bench_test.go measures Coraza on exactly what this builder
  // emits for a JSON API host (blocking, default families and limits). UPDATE_WAF_TESTDATA=1 rewrites the files.
  it.each(['fast', 'full'] as const)('%s profile', (profile) => {
    const file = join(__dirname, `../../deploy/proxy/caddy/wafext/testdata/${profile}-json-api.conf`)
    const directives = `${buildWafHandler(host({ waf_profile: profile }), { ...settings, logDir: '/var/log/panel' }).directives}\n`
    if (process.env.UPDATE_WAF_TESTDATA === '1') writeFileSync(file, directives)
    expect(directives).toBe(readFileSync(file, 'utf8'))
  })
})

describe('the argument limit is an operator choice that the push warns about', () => {
  // The bouncer off: a proxy without the crowdsec module would warn about it.
  const warningsOf = (...hosts: HostSnapshot[]) =>
    buildProxyConfig(buildSnapshot({ modules: ['waf'], hosts: hosts.map((h) => ({ ...h, bouncer_enabled: false })) })).warnings
  const fastHost = (o: Partial<HostSnapshot>) => host({ waf_profile: 'fast', ...o })

  it('no profile has an argument limit by default, so no host on the defaults is warned about', () => {
    expect(WAF_PROFILE_DEFAULTS.fast.maxArgs).toBe(0)
    expect(WAF_PROFILE_DEFAULTS.full.maxArgs).toBe(0)
    expect(warningsOf(fastHost({}), host({ id: 2, waf_profile: 'full' }))).toEqual([])
  })

  it('a host that sets one is named, with the count, what goes uninspected and the fix', () => {
    expect(warningsOf(fastHost({ waf_body_max_args: 300 }), host({ id: 2, waf_profile: 'fast' }))).toEqual([
      'host host1.example.test: its WAF argument limit is 300 values of a request body: the values after the first 300 are not inspected, so an attack placed after 300 harmless values gets through. Clear the limit to inspect every value, or refuse a body over it',
    ])
    expect(warningsOf(host({ waf_body_max_args: 10, waf_body_limit_action: 'pass' }))[0]).toMatch(
      /^host host1\.example\.test: its WAF argument limit is 10 values of a request body: a body with more is not inspected at all,/,
    )
    // Detection mode logs less past the limit, too.
    expect(warningsOf(fastHost({ waf_mode: 'detection', waf_body_max_args: 300 }))).toHaveLength(1)
  })

  it('no warning where nothing goes uninspected: refused past the limit, or the WAF off', () => {
    expect(warningsOf(fastHost({ waf_body_max_args: 300, waf_body_limit_action: 'refuse' }))).toEqual([])
    // The full profile refuses past a limit by default.
    expect(warningsOf(host({ waf_body_max_args: 300 }))).toEqual([])
    expect(warningsOf(fastHost({ waf_enabled: false, waf_body_max_args: 300 }))).toEqual([])
  })
})
