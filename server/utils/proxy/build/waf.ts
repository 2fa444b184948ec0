import type { HostSnapshot, Json, ProxySnapshot } from './types'

/** Our own rule id (outside the CRS 9xxxxx rule files we load); the engine-side appsec plugin uses the same id. */
export const WAF_THRESHOLD_RULE_ID = 9990110

/** A path placed in SecLang text: a space, quote or line break would end or inject a directive. */
function _assertSafeDirectivePath(path: string): void {
  if (!path || /[\s"'\\\u0000-\u001f\u007f]/.test(path)) throw new Error(`unsafe path refused in WAF directives: ${JSON.stringify(path)}`)
}

/** Coraza with the OWASP CRS; thresholds set before the CRS rules read them (A2). */
export function buildWafHandler(host: Pick<HostSnapshot, 'waf_mode'>, snapshot: Pick<ProxySnapshot, 'waf' | 'logDir'>): Json {
  const auditLog = `${snapshot.logDir}/waf-audit.log`
  _assertSafeDirectivePath(auditLog)
  const inbound = Math.trunc(snapshot.waf.inboundThreshold)
  const outbound = Math.trunc(snapshot.waf.outboundThreshold)
  const directives = [
    'Include @coraza.conf-recommended',
    // CRS 901100/901110 set the thresholds only when unset, so this phase-1 action must come first.
    `SecAction "id:${WAF_THRESHOLD_RULE_ID},phase:1,pass,nolog,setvar:tx.inbound_anomaly_score_threshold=${inbound},setvar:tx.outbound_anomaly_score_threshold=${outbound}"`,
    'Include @crs-setup.conf.example',
    'Include @owasp_crs/*.conf',
    // After the recommended file, which says DetectionOnly: the last SecRuleEngine wins.
    host.waf_mode === 'blocking' ? 'SecRuleEngine On' : 'SecRuleEngine DetectionOnly',
    'SecAuditEngine RelevantOnly',
    // K: matched rules as structured data (rule id, severity) for the log ingester.
    'SecAuditLogParts ABIJDEFHKZ',
    'SecAuditLogType Serial',
    'SecAuditLogFormat JSON',
    `SecAuditLog ${auditLog}`,
  ]
  return { handler: 'waf', load_owasp_crs: true, directives: directives.join('\n') }
}
