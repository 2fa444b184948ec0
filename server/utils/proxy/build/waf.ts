import type { HostSnapshot, Json, ProxySnapshot } from './types'

/** Coraza with the OWASP CRS; thresholds set before the CRS rules read them (A2). */
export function buildWafHandler(host: HostSnapshot, snapshot: Pick<ProxySnapshot, 'waf' | 'logDir'>): Json {
  const directives = [
    'Include @coraza.conf-recommended',
    `SecAction "id:9990110,phase:1,pass,nolog,setvar:tx.inbound_anomaly_score_threshold=${snapshot.waf.inboundThreshold},setvar:tx.outbound_anomaly_score_threshold=${snapshot.waf.outboundThreshold}"`,
    'Include @crs-setup.conf.example',
    'Include @owasp_crs/*.conf',
    host.waf_mode === 'blocking' ? 'SecRuleEngine On' : 'SecRuleEngine DetectionOnly',
    'SecAuditEngine RelevantOnly',
    'SecAuditLogParts ABIJDEFHKZ',
    'SecAuditLogType Serial',
    'SecAuditLogFormat JSON',
    `SecAuditLog ${snapshot.logDir}/waf-audit.log`,
  ]
  return { handler: 'waf', load_owasp_crs: true, directives: directives.join('\n') }
}
