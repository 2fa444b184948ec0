import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { WAF_DETECTION_AUDIT_RULE_ID, WAF_THRESHOLD_RULE_ID, buildWafHandler } from '../../server/utils/proxy/build/waf'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const settings = { waf: { inboundThreshold: 10, outboundThreshold: 8 }, logDir: '/var/log/panel' }
const linesOf = (mode: 'blocking' | 'detection') => (buildWafHandler({ waf_mode: mode }, settings).directives as string).split('\n')

describe('buildWafHandler — directives', () => {
  it('is the Coraza handler with the embedded CRS', () => {
    const h = buildWafHandler({ waf_mode: 'blocking' }, settings)
    expect(h.handler).toBe('waf')
    expect(h.load_owasp_crs).toBe(true)
    expect(h.include).toBeUndefined() // deprecated key
  })

  it('blocking: the exact directive list, thresholds before the CRS rules, engine On after the recommended file', () => {
    expect(linesOf('blocking')).toEqual([
      'Include @coraza.conf-recommended',
      `SecAction "id:${WAF_THRESHOLD_RULE_ID},phase:1,pass,nolog,setvar:tx.inbound_anomaly_score_threshold=10,setvar:tx.outbound_anomaly_score_threshold=8"`,
      'Include @crs-setup.conf.example',
      'Include @owasp_crs/*.conf',
      'SecRuleEngine On',
      'SecAuditEngine RelevantOnly',
      'SecAuditLogParts ABIJDEFHKZ',
      'SecAuditLogType Serial',
      'SecAuditLogFormat JSON',
      'SecAuditLog /var/log/panel/waf-audit.log',
    ])
  })

  it('detection: DetectionOnly, every status relevant, and a logging-phase rule that drops the entry below both thresholds', () => {
    expect(linesOf('detection')).toEqual([
      'Include @coraza.conf-recommended',
      `SecAction "id:${WAF_THRESHOLD_RULE_ID},phase:1,pass,nolog,setvar:tx.inbound_anomaly_score_threshold=10,setvar:tx.outbound_anomaly_score_threshold=8"`,
      'Include @crs-setup.conf.example',
      'Include @owasp_crs/*.conf',
      'SecRuleEngine DetectionOnly',
      'SecAuditEngine RelevantOnly',
      'SecAuditLogRelevantStatus ".*"',
      `SecRule TX:BLOCKING_INBOUND_ANOMALY_SCORE "@lt %{tx.inbound_anomaly_score_threshold}" "id:${WAF_DETECTION_AUDIT_RULE_ID},phase:5,pass,nolog,chain"`,
      '    SecRule TX:BLOCKING_OUTBOUND_ANOMALY_SCORE "@lt %{tx.outbound_anomaly_score_threshold}" "ctl:auditEngine=Off"',
      'SecAuditLogParts ABIJDEFHKZ',
      'SecAuditLogType Serial',
      'SecAuditLogFormat JSON',
      'SecAuditLog /var/log/panel/waf-audit.log',
    ])
  })

  it('blocking keeps the recommended audit selection (no status override, no logging-phase rule)', () => {
    const blocking = linesOf('blocking').join('\n')
    expect(blocking).not.toContain('SecAuditLogRelevantStatus')
    expect(blocking).not.toContain(String(WAF_DETECTION_AUDIT_RULE_ID))
  })

  it('uses ids of its own, not CRS ones (900110 would be a duplicate id)', () => {
    for (const id of [WAF_THRESHOLD_RULE_ID, WAF_DETECTION_AUDIT_RULE_ID]) {
      expect(id).not.toBe(900110)
      expect(String(id)).toHaveLength(7)
    }
    expect(WAF_DETECTION_AUDIT_RULE_ID).not.toBe(WAF_THRESHOLD_RULE_ID)
  })

  it('refuses a log directory that would break out of the directive', () => {
    for (const logDir of ['/var/log/my logs', '/var/log/x\nSecRuleEngine Off', '/var/log/"x']) expect(() => buildWafHandler({ waf_mode: 'blocking' }, { ...settings, logDir })).toThrow(/unsafe path/)
  })
})

describe('buildWafHandler — in the host chain', () => {
  it('is emitted for waf_enabled hosts when the proxy has the waf module', () => {
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['waf'], ...settings, hosts: [buildHostSnapshot({ waf_enabled: true, waf_mode: 'blocking' }), buildHostSnapshot({ id: 2 })] }))
    expect(hostSubroutes(config, 'host1.example.test')[0].handle).toEqual([buildWafHandler({ waf_mode: 'blocking' }, settings)])
    expect(JSON.stringify(hostSubroutes(config, 'host2.example.test'))).not.toContain('"waf"')
  })

  it('without the waf module: no handler and a warning', () => {
    const r = buildProxyConfig(buildSnapshot({ modules: ['ratelimit'], hosts: [buildHostSnapshot({ waf_enabled: true, bouncer_enabled: false })] }))
    expect(JSON.stringify(r.config)).not.toContain('"waf"')
    expect(r.warnings).toEqual(['host host1.example.test: the proxy has no waf module; WAF not applied'])
  })
})
