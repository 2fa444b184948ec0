import { describe, expect, it } from 'vitest'
import { parseAccessLine, parseErrorLine, parseWafLine, RAW_LIMIT_BYTES, type ParseContext } from '../../server/utils/logs/parse'
import { compileLogFilter, compileSafeRegex, parseStatusExpression } from '../../server/utils/logs/filters'

const ctx: ParseContext = { hostIdOf: (d) => (d === 'shop.example.org' ? 7 : null), countryOf: (ip) => (ip.startsWith('198.51.100.') ? 'ZZ' : null) }
const access = '{"level":"info","ts":1777716672.481,"logger":"http.log.access.host_12","msg":"handled request","request":{"remote_ip":"198.51.100.23","remote_port":"40412","proto":"HTTP/2.0","method":"POST","host":"shop.example.org:8443","uri":"/cart/add?id=42","headers":{"User-Agent":["Mozilla/5.0"]}},"duration":0.0132,"size":512,"status":201,"resp_headers":{"X-Panel-Rule-Id":["3"]}}'

describe('parseAccessLine', () => {
  it('maps every attribute of a Caddy access line', () => {
    expect(parseAccessLine(access, ctx)).toMatchObject({
      tsMs: 1777716672481, source: 'caddy_access', hostId: 12, hostDomain: 'shop.example.org', ruleId: 3, status: 201, method: 'POST',
      path: '/cart/add?id=42', remoteIp: '198.51.100.23', userAgent: 'Mozilla/5.0', level: 'info', message: 'handled request', durationMs: 13.2, country: 'ZZ',
    })
  })
  it('finds the host by domain when the logger has no host suffix, and no rule without the tag', () => {
    const row = parseAccessLine(access.replace('.host_12', '').replace('"resp_headers":{"X-Panel-Rule-Id":["3"]}', '"resp_headers":{}'), ctx)
    expect(row).toMatchObject({ hostId: 7, ruleId: null })
  })
  it.each([['not json at all'], ['{"level":"info"}'], ['[1,2,3]']])('keeps a malformed line as a row with its raw text: %s', (line) => {
    expect(parseAccessLine(line, ctx, 1000)).toMatchObject({ tsMs: 1000, source: 'caddy_access', level: 'error', raw: line, message: expect.stringMatching(/^unparsed log line/) })
  })
  it('truncates a huge line instead of storing it whole', () => {
    const row = parseAccessLine('x'.repeat(2 * RAW_LIMIT_BYTES), ctx)
    expect(row.raw!.length).toBeLessThan(RAW_LIMIT_BYTES + 100)
    expect(row.raw).toMatch(/truncated/)
  })
})

describe('parseErrorLine and parseWafLine', () => {
  it('maps an error line', () => {
    const line = '{"level":"error","ts":1777716690.02,"logger":"http.log.error","msg":"dial tcp 172.20.0.9:3000: connect: connection refused","request":{"remote_ip":"172.20.0.1","client_ip":"198.51.100.23","method":"GET","host":"shop.example.org","uri":"/","headers":{"User-Agent":["curl/8.9"]}},"duration":0.0021,"status":502}'
    expect(parseErrorLine(line, ctx)).toMatchObject({ source: 'caddy_error', hostId: 7, status: 502, level: 'error', remoteIp: '198.51.100.23', message: expect.stringMatching(/connection refused/), durationMs: 2.1 })
  })
  it('maps a Coraza JSON audit entry: most severe rule, severity name, anomaly score', () => {
    const line = JSON.stringify({
      transaction: { unix_timestamp: 1777716672000000000, client_ip: '198.51.100.23', server_id: 'shop.example.org', request: { method: 'GET', uri: '/search?q=x', headers: { 'user-agent': ['curl/8.9'] } }, response: { status: 403 }, is_interrupted: true },
      messages: [
        { message: 'Inbound Anomaly Score Exceeded (Total Score: 10)', data: { id: 949110, severity: -1, msg: 'Inbound Anomaly Score Exceeded (Total Score: 10)' } },
        { message: 'XSS', data: { id: 941100, severity: 3, msg: 'XSS Attack Detected' } },
        { message: 'SQLi', data: { id: 942100, severity: 2, msg: 'SQL Injection Attack Detected via libinjection' } },
      ],
    })
    expect(parseWafLine(line, ctx)).toMatchObject({ tsMs: 1777716672000, source: 'waf_audit', hostId: 7, status: 403, wafRuleId: 942100, wafSeverity: 'CRITICAL', wafAnomalyScore: 10, level: 'warn', message: 'SQL Injection Attack Detected via libinjection', country: 'ZZ' })
  })
})

describe('filter compiler — bad input is a 400', () => {
  it.each([
    [{ status: '4yy' }, /status/], [{ status: '504-500' }, /status/], [{ path: 're:(a+)+$' }, /nested quantifiers/], [{ path: 're:(' }, /invalid regular expression/],
    [{ remote_ip: '10.0.0.0/99' }, /remote_ip/], [{ source: 'syslog' }, /source/], [{ from: 'yesterday' }, /from/], [{ host_id: 'one' }, /host_id/], [{ method: 'GE T' }, /method/],
  ])('%j', (q, message) => expect(() => compileLogFilter(q)).toThrow(message))
  it('status expressions', () => {
    expect(parseStatusExpression('404,5xx,200-204')).toEqual([[404, 404], [500, 599], [200, 204]])
  })
  it('a safe regex compiles', () => expect(compileSafeRegex('^/api/v[0-9]+/').test('/api/v2/x')).toBe(true))
})
