import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { WAF_THRESHOLD_RULE_ID, buildWafHandler } from '../../server/utils/proxy/build/waf'
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

  it('detection: DetectionOnly, and nothing else changes', () => {
    const detection = linesOf('detection')
    expect(detection).toContain('SecRuleEngine DetectionOnly')
    expect(detection).not.toContain('SecRuleEngine On')
    expect(detection.filter((l) => !l.startsWith('SecRuleEngine'))).toEqual(linesOf('blocking').filter((l) => !l.startsWith('SecRuleEngine')))
  })

  it('uses an id of its own, not a CRS one (900110 would be a duplicate id)', () => {
    expect(WAF_THRESHOLD_RULE_ID).not.toBe(900110)
    expect(String(WAF_THRESHOLD_RULE_ID)).toHaveLength(7)
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
