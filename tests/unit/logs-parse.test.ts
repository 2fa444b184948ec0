import { describe, expect, it } from 'vitest'
import {
  FIELD_LIMITS,
  parseAccessLine,
  parseErrorLine,
  parseWafLine,
  WAF_RULES_LIMIT,
  RAW_LIMIT_CHARS,
  type ParseContext,
} from '../../server/utils/logs/parse'

const ctx: ParseContext = {
  hostIdOf: (d) => (d === 'shop.example.org' ? 7 : null),
  countryOf: (ip) => (ip.startsWith('198.51.100.') ? 'ZZ' : null),
  asnOf: (ip) => (ip.startsWith('198.51.100.') ? 64500 : null),
}
// proxy-and-engine.md A7, with the panel's per-host logger name and rule tag.
const access =
  '{"level":"info","ts":1777716672.481,"logger":"http.log.access.host_12","msg":"handled request","request":{"remote_ip":"172.20.0.1","remote_port":"40412","client_ip":"198.51.100.23","proto":"HTTP/2.0","method":"POST","host":"shop.example.org:8443","uri":"/cart/add?id=42","headers":{"User-Agent":["Mozilla/5.0 (X11; Linux x86_64)"],"Content-Type":["application/json"],"Cookie":["REDACTED"]},"tls":{"resumed":false,"version":772,"cipher_suite":4865,"proto":"h2","server_name":"shop.example.org","ech":false}},"bytes_read":27,"user_id":"","duration":0.0132,"size":512,"status":201,"resp_headers":{"Server":["Caddy"],"X-Panel-Rule-Id":["3"]}}'
const errorLine =
  '{"level":"error","ts":1777716690.02,"logger":"http.log.error","msg":"dial tcp 172.20.0.9:3000: connect: connection refused","request":{"remote_ip":"172.20.0.1","remote_port":"40420","client_ip":"198.51.100.23","proto":"HTTP/1.1","method":"GET","host":"shop.example.org","uri":"/","headers":{"User-Agent":["curl/8.9"]}},"duration":0.0021,"status":502,"err_id":"p4k2x9w1q","err_trace":"reverseproxy.statusError (reverseproxy.go:1390)"}'
// CRS 4.15.0's blocking rule as Coraza v3.3.3 writes it in `data.raw` (captured from the plugin Caddy).
const DENY_949110 = `SecRule TX:BLOCKING_INBOUND_ANOMALY_SCORE "@ge %{tx.inbound_anomaly_score_threshold}" "id:949110,phase:2,deny,t:none,msg:'Inbound Anomaly Score Exceeded (Total Score: %{TX.BLOCKING_INBOUND_ANOMALY_SCORE})',tag:'anomaly-evaluation',tag:'OWASP_CRS',ver:'OWASP_CRS/4.15.0'"`
// proxy-and-engine.md A2 (parts ABIJDEFHKZ); a blocked transaction, as Coraza writes it: response status 0.
const waf = {
  transaction: {
    timestamp: '2026/05/02 10:11:12',
    unix_timestamp: 1777716672000000000,
    id: 'kQzTbWfRnYpLxHsM',
    client_ip: '198.51.100.23',
    client_port: 0,
    host_ip: '',
    host_port: 0,
    server_id: 'shop.example.org',
    request: {
      method: 'GET',
      protocol: 'HTTP/2.0',
      uri: '/search?q=%27+or+1%3D1--',
      http_version: '',
      headers: { host: ['shop.example.org'], 'user-agent': ['curl/8.9'] },
      body: '',
      files: null,
      args: {},
      length: 0,
    },
    response: { protocol: '', status: 0, headers: {}, body: '' },
    producer: { connector: '', version: '', server: '', rule_engine: 'On', stopwatch: '...', rulesets: ['OWASP_CRS/4.25.0'] },
    highest_severity: '',
    is_interrupted: true,
  },
  messages: [
    {
      actionset: 'OWASP_CRS/4.25.0',
      message: 'XSS Attack Detected',
      error_message: '',
      data: { id: 941100, msg: 'XSS Attack Detected', severity: 3, tags: [] },
    },
    {
      actionset: 'OWASP_CRS/4.25.0',
      message: 'SQL Injection Attack Detected via libinjection',
      error_message: '[client "198.51.100.23"] Coraza: Warning. ...',
      data: {
        file: '@owasp_crs/REQUEST-942-APPLICATION-ATTACK-SQLI.conf',
        line: 47,
        id: 942100,
        rev: '',
        msg: 'SQL Injection Attack Detected via libinjection',
        data: "Matched Data: s&1c found within ARGS:q: ' or 1=1--",
        severity: 2,
        ver: 'OWASP_CRS/4.25.0',
        maturity: 0,
        accuracy: 0,
        tags: ['attack-sqli', 'OWASP_CRS'],
        raw: 'SecRule ...',
      },
    },
    {
      actionset: '',
      message: 'Inbound Anomaly Score Exceeded (Total Score: 10)',
      error_message: '',
      data: { id: 949110, msg: 'Inbound Anomaly Score Exceeded (Total Score: 10)', severity: -1, raw: DENY_949110 },
    },
  ],
}

describe('parseAccessLine', () => {
  it('maps every attribute of a Caddy access line', () => {
    expect(parseAccessLine(access, ctx)).toEqual({
      tsMs: 1777716672481,
      source: 'caddy_access',
      hostId: 12,
      hostDomain: 'shop.example.org',
      ruleId: 3,
      status: 201,
      method: 'POST',
      path: '/cart/add?id=42',
      remoteIp: '198.51.100.23',
      userAgent: 'Mozilla/5.0 (X11; Linux x86_64)',
      level: 'info',
      message: 'handled request',
      durationMs: 13.2,
      country: 'ZZ',
      asn: 64500,
      raw: access,
      requestId: null,
    })
  })
  it("stores Caddy's request id (uuid) as the refusal page shows it, and nothing that is not one", () => {
    const withId = (uuid: unknown) => parseAccessLine(JSON.stringify({ ...JSON.parse(access), uuid }), ctx).requestId
    expect(withId('5cef7b46-a205-4554-9705-f7140937654b')).toBe('5cef7b46-a205-4554-9705-f7140937654b')
    for (const odd of ['5CEF7B46-A205-4554-9705-F7140937654B', '<script>', `${'a'.repeat(8)}-x`, 42, ['x'], null, ''])
      expect(withId(odd), JSON.stringify(odd)).toBeNull()
  })
  it('finds the host by domain when the logger has no host suffix, takes remote_ip without client_ip, and no rule without the tag', () => {
    const e = JSON.parse(access)
    e.logger = 'http.log.access'
    delete e.request.client_ip
    e.resp_headers = {}
    expect(parseAccessLine(JSON.stringify(e), ctx)).toMatchObject({ hostId: 7, ruleId: null, remoteIp: '172.20.0.1', country: null })
  })
  it.each([
    ['not json at all', 'not JSON'],
    ['{"level":"info"}', 'no request object'],
    ['[1,2,3]', 'not a JSON object'],
    ['"a string"', 'not a JSON object'],
    ['null', 'not a JSON object'],
    ['{"request":"GET /"}', 'no request object'],
    ['{"level":"info","ts":1777716672', 'not JSON'],
  ])('keeps a malformed line as a row with its raw text: %s', (line, why) => {
    expect(parseAccessLine(line, ctx, 1000)).toEqual({
      tsMs: 1000,
      source: 'caddy_access',
      level: 'error',
      raw: line,
      message: `unparsed log line: ${why}`,
    })
  })
  it('never lets a field of the wrong type or size through', () => {
    const odd = JSON.stringify({
      level: { x: 1 },
      ts: 1e300,
      logger: ['x'],
      msg: 42,
      status: '200',
      duration: -5,
      request: { remote_ip: { ip: 1 }, method: 7, host: ['a'], uri: 'p'.repeat(10_000), headers: { 'User-Agent': 'u'.repeat(5000) } },
      resp_headers: { 'X-Panel-Rule-Id': ['1e3'] },
    })
    const row = parseAccessLine(odd, ctx, 5000)
    expect(row).toMatchObject({
      tsMs: 5000,
      level: 'info',
      message: '42',
      status: null,
      durationMs: null,
      remoteIp: null,
      method: '7',
      hostDomain: null,
      ruleId: null,
    })
    expect(row.path).toHaveLength(FIELD_LIMITS.path)
    expect(row.userAgent).toHaveLength(FIELD_LIMITS.userAgent)
  })
  it('accepts a timestamp only between 2000 and 2100', () => {
    for (const ts of [0, -1, 4_200_000_000, '1777716672'])
      expect(parseAccessLine(access.replace('"ts":1777716672.481', `"ts":${JSON.stringify(ts)}`), ctx, 99).tsMs).toBe(99)
  })
  it('strips the port and brackets from the host and lower-cases it', () => {
    expect(parseAccessLine(access.replace('shop.example.org:8443', 'SHOP.Example.ORG'), ctx).hostDomain).toBe('shop.example.org')
    expect(parseAccessLine(access.replace('shop.example.org:8443', '[2001:db8::1]:443'), ctx).hostDomain).toBe('2001:db8::1')
  })
  it('truncates a huge line in raw instead of storing it whole', () => {
    const row = parseAccessLine('x'.repeat(2 * RAW_LIMIT_CHARS), ctx)
    expect(row.raw!.length).toBeLessThan(RAW_LIMIT_CHARS + 100)
    expect(row.raw).toMatch(/…\[truncated 65536 chars\]$/)
  })
  it('stores text with replacement characters (invalid UTF-8 read from a file) as it is', () => {
    const line = Buffer.concat([Buffer.from('{"request":{"uri":"/a'), Buffer.from([0xff, 0xfe]), Buffer.from('"},"status":200}')]).toString(
      'utf8',
    )
    expect(parseAccessLine(line, ctx)).toMatchObject({ path: '/a\uFFFD\uFFFD', status: 200 })
  })
})

describe('parseErrorLine', () => {
  it('maps an error line', () => {
    expect(parseErrorLine(errorLine, ctx)).toEqual({
      tsMs: 1777716690020,
      source: 'caddy_error',
      hostId: 7,
      hostDomain: 'shop.example.org',
      status: 502,
      method: 'GET',
      path: '/',
      remoteIp: '198.51.100.23',
      userAgent: 'curl/8.9',
      level: 'error',
      message: 'dial tcp 172.20.0.9:3000: connect: connection refused',
      raw: errorLine,
      durationMs: 2.1,
      country: 'ZZ',
    })
  })
  it('takes the host from a per-host logger name, and keeps a 4xx handler error at debug level', () => {
    const line = errorLine
      .replace('"http.log.error"', '"http.log.error.host_4"')
      .replace('"level":"error"', '"level":"debug"')
      .replace('"status":502', '"status":403')
    expect(parseErrorLine(line, ctx)).toMatchObject({ hostId: 4, level: 'debug', status: 403 })
  })
  it('keeps a line without a request object, and a malformed one', () => {
    expect(parseErrorLine('{"level":"error","ts":1777716690,"msg":"tls: handshake failure"}', ctx)).toMatchObject({
      source: 'caddy_error',
      hostDomain: null,
      message: 'tls: handshake failure',
      tsMs: 1777716690000,
    })
    expect(parseErrorLine('{', ctx, 1)).toMatchObject({ source: 'caddy_error', level: 'error', raw: '{', tsMs: 1 })
  })
  it('files a certificate line (tls.obtain / tls.renew) under the host its identifier names', () => {
    const line =
      '{"level":"error","ts":1795384756.45,"logger":"tls.obtain","msg":"could not get certificate from issuer","identifier":"shop.example.org","issuer":"127.0.0.1:1-dir","error":"connection refused"}'
    expect(parseErrorLine(line, ctx)).toMatchObject({
      hostDomain: 'shop.example.org',
      hostId: 7,
      level: 'error',
      message: 'could not get certificate from issuer',
    })
    const health =
      '{"level":"info","ts":1795384755.94,"logger":"http.handlers.reverse_proxy.health_checker.active","msg":"HTTP request failed","host":"127.0.0.1:4","error":"refused"}'
    expect(parseErrorLine(health, ctx)).toMatchObject({ hostDomain: null, hostId: null, level: 'info', message: 'HTTP request failed' })
  })
})

describe('parseWafLine', () => {
  it('maps a Coraza JSON audit entry: most severe attack rule, severity name, anomaly score', () => {
    const line = JSON.stringify(waf)
    expect(parseWafLine(line, ctx)).toEqual({
      tsMs: 1777716672000,
      source: 'waf_audit',
      hostId: 7,
      hostDomain: 'shop.example.org',
      status: 403,
      method: 'GET',
      path: '/search?q=%27+or+1%3D1--',
      remoteIp: '198.51.100.23',
      userAgent: 'curl/8.9',
      level: 'warn',
      message: 'SQL Injection Attack Detected via libinjection',
      raw: line,
      wafRuleId: 942100,
      wafSeverity: 'CRITICAL',
      wafAnomalyScore: 10,
      wafRules: JSON.stringify([
        { id: 941100, severity: 'ERROR', score: 4, msg: 'XSS Attack Detected' },
        { id: 942100, severity: 'CRITICAL', score: 5, msg: 'SQL Injection Attack Detected via libinjection' },
        { id: 949110, severity: null, score: 0, msg: 'Inbound Anomaly Score Exceeded (Total Score: 10)' },
      ]),
      country: 'ZZ',
    })
  })

  it('stores every matched rule once with its inbound score: from its own setvar, else from its severity', () => {
    const e = structuredClone(waf) as any
    const rule = (id: number, severity: number, raw = '') => ({ message: `rule ${id}`, data: { id, msg: `rule ${id}`, severity, raw } })
    e.messages = [
      // A warning-scored rule logged at CRITICAL severity: its setvar decides.
      rule(
        920350,
        2,
        `SecRule REQUEST_HEADERS:Host "@rx x" "id:920350,severity:'CRITICAL',setvar:'tx.inbound_anomaly_score_pl1=+%{tx.warning_anomaly_score}'"`,
      ),
      rule(942190, 2),
      rule(942190, 2), // Coraza logs a rule again per matched variable: counted once
      rule(942270, 2),
      rule(951120, 2), // a response rule: the outbound score
      rule(980170, 2), // a reporting rule
      rule(942101, 5), // NOTICE
      rule(942102, 6), // INFO scores nothing
    ]
    const stored = JSON.parse(parseWafLine(JSON.stringify(e), ctx).wafRules!)
    expect(stored.map((r: any) => [r.id, r.severity, r.score])).toEqual([
      [920350, 'CRITICAL', 3],
      [942190, 'CRITICAL', 5],
      [942270, 'CRITICAL', 5],
      [951120, 'CRITICAL', 0],
      [980170, 'CRITICAL', 0],
      [942101, 'NOTICE', 2],
      [942102, 'INFO', 0],
    ])
    e.messages = Array.from({ length: 100 }, (_, i) => rule(100000 + i, 2, 'x'.repeat(10)))
    e.messages[0].data.msg = 'm'.repeat(5000)
    const many = JSON.parse(parseWafLine(JSON.stringify(e), ctx).wafRules!)
    expect(many).toHaveLength(WAF_RULES_LIMIT)
    expect(many[0].msg).toHaveLength(200)
  })
  it('replaces credentials (cookies, authorization) in the kept line, and the session token wherever it is quoted', () => {
    const e = structuredClone(waf) as any
    const token = 'tok3n-of-the-operator_xyz'
    e.transaction.request.headers = {
      ...e.transaction.request.headers,
      Cookie: [`app=1; panel_session=${token}`],
      authorization: ['Basic dXNlcjpwYXNz'],
    }
    e.transaction.response = { ...e.transaction.response, headers: { 'Set-Cookie': ['app=2'] } }
    e.messages[1].data.msg = `SQL Injection in REQUEST_COOKIES:panel_session: panel_session=${token}`
    const row = parseWafLine(JSON.stringify(e), ctx)
    for (const secret of [token, 'dXNlcjpwYXNz', 'app=1', 'app=2']) expect(row.raw).not.toContain(secret)
    const kept = JSON.parse(row.raw!)
    expect(kept.transaction.request.headers.Cookie).toEqual(['REDACTED'])
    expect(kept.transaction.request.headers.authorization).toEqual(['REDACTED'])
    expect(kept.transaction.response.headers['Set-Cookie']).toEqual(['REDACTED'])
    expect(kept.transaction.request.headers['User-Agent'] ?? kept.transaction.request.headers['user-agent']).toBeDefined()
    expect(row.message).not.toContain(token)
  })
  it('without audit part K, reads the rule from the text form of error_message', () => {
    const e = structuredClone(waf) as any
    e.messages = [
      {
        message: '',
        error_message:
          '[client "198.51.100.23"] Coraza: Access denied (phase 2). Inbound Anomaly Score Exceeded (Total Score: 8) [file "x"] [line "1"] [id "949110"] [rev ""] [msg "Inbound Anomaly Score Exceeded (Total Score: 8)"] [severity "emergency"]',
      },
      {
        message: '',
        error_message:
          '[client "198.51.100.23"] Coraza: Warning. XSS [file "x"] [line "2"] [id "941100"] [msg "XSS Attack Detected via libinjection"] [severity "critical"] [tag "attack-xss"]',
      },
    ]
    expect(parseWafLine(JSON.stringify(e), ctx)).toMatchObject({
      wafRuleId: 941100,
      wafSeverity: 'CRITICAL',
      wafAnomalyScore: 8,
      message: 'XSS Attack Detected via libinjection',
    })
  })
  it('a transaction with only the scoring rule, or no severity, or not interrupted', () => {
    const e = structuredClone(waf) as any
    e.messages = [waf.messages[2]]
    e.transaction.is_interrupted = false
    delete e.transaction.server_id
    delete e.transaction.response
    expect(parseWafLine(JSON.stringify(e), ctx)).toMatchObject({
      wafRuleId: 949110,
      wafSeverity: null,
      wafAnomalyScore: 10,
      level: 'info',
      status: null,
      hostDomain: 'shop.example.org',
    })
    e.messages = []
    expect(parseWafLine(JSON.stringify(e), ctx)).toMatchObject({
      wafRuleId: null,
      wafSeverity: null,
      wafAnomalyScore: null,
      message: 'WAF rule matched',
    })
  })
  describe('status: what the client got', () => {
    const entry = (tx: Record<string, unknown>, messages: unknown[] = waf.messages) =>
      JSON.stringify({ ...waf, transaction: { ...waf.transaction, ...tx }, messages })
    const denyRule = (actions: string, operator = '@ge 5') => ({
      message: 'm',
      data: { id: 9990001, msg: 'm', severity: 2, raw: `SecRule TX:SCORE "${operator}" "${actions}"` },
    })

    it.each([
      // Coraza writes 0 when a request phase interrupted (the response never existed).
      ['blocked in a request phase (response status 0)', { is_interrupted: true, response: { status: 0 } }, 403],
      // The response phase interrupted (outbound anomaly): the entry keeps the upstream's 200, the client got 403.
      ['blocked in the response phase (upstream status kept)', { is_interrupted: true, response: { status: 200 } }, 403],
      ['blocked, entry without a response part', { is_interrupted: true, response: undefined }, 403],
      // Detection mode: nothing interrupted, the upstream's answer went out.
      ['detection mode: the upstream answer', { is_interrupted: false, response: { status: 200 } }, 200],
      ['not interrupted, the upstream failed', { is_interrupted: false, response: { status: 502 } }, 502],
    ])('%s', (_, tx, status) => {
      expect(parseWafLine(entry(tx), ctx).status).toBe(status)
    })

    it("a deny rule's own status: is the answer", () => {
      const blocked = { is_interrupted: true, response: { status: 0 } }
      expect(parseWafLine(entry(blocked, [waf.messages[1], denyRule("id:9990001,phase:2,deny,status:406,msg:'custom'")]), ctx).status).toBe(
        406,
      )
      expect(parseWafLine(entry(blocked, [denyRule('id:9990001,phase:1,t:none,status:429,deny')]), ctx).status).toBe(429)
    })

    it('is not fooled by deny or status: inside quoted values, operators or non-deny rules', () => {
      const blocked = { is_interrupted: true, response: { status: 0 } }
      // "status:500" only inside msg; "deny" only in the operator; a pass rule with status: (not the interrupting one).
      expect(parseWafLine(entry(blocked, [denyRule("id:9990001,phase:2,deny,msg:'upstream said status:500, deny'")]), ctx).status).toBe(403)
      expect(parseWafLine(entry(blocked, [denyRule('id:9990002,phase:2,pass,status:418', '@rx deny')]), ctx).status).toBe(403)
      expect(parseWafLine(entry(blocked, [denyRule('id:9990003,phase:2,block,status:418')]), ctx).status).toBe(403)
    })

    it('a detection-mode entry keeps level info, the attack rule and the score it would have been blocked with', () => {
      const row = parseWafLine(entry({ is_interrupted: false, response: { status: 200 }, producer: { rule_engine: 'DetectionOnly' } }), ctx)
      expect(row).toMatchObject({ status: 200, level: 'info', wafRuleId: 942100, wafSeverity: 'CRITICAL', wafAnomalyScore: 10 })
    })
  })

  it.each([
    ['{"messages":[]}', 'no transaction object'],
    ['oops', 'not JSON'],
  ])('keeps a malformed entry: %s', (line, why) => {
    expect(parseWafLine(line, ctx, 3)).toEqual({
      tsMs: 3,
      source: 'waf_audit',
      level: 'error',
      raw: line,
      message: `unparsed log line: ${why}`,
    })
  })
})
