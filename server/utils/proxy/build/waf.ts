import type { HostSnapshot, Json, ProxySnapshot } from './types'

/** Our own rule id (outside the CRS 9xxxxx rule files we load); the engine-side appsec plugin uses the same id. */
export const WAF_THRESHOLD_RULE_ID = 9990110
/** Our own phase-5 rule that keeps detection mode's audit log to the transactions blocking mode would have blocked. */
export const WAF_DETECTION_AUDIT_RULE_ID = 9990120

/** A path placed in SecLang text: a space, quote or line break would end or inject a directive. */
function _assertSafeDirectivePath(path: string): void {
  if (!path || /[\s"'\\\u0000-\u001f\u007f]/.test(path)) throw new Error(`unsafe path refused in WAF directives: ${JSON.stringify(path)}`)
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

/** Coraza with the OWASP CRS; thresholds set before the CRS rules read them (A2). */
export function buildWafHandler(host: Pick<HostSnapshot, 'waf_mode'>, snapshot: Pick<ProxySnapshot, 'waf' | 'logDir'>): Json {
  const auditLog = `${snapshot.logDir}/waf-audit.log`
  _assertSafeDirectivePath(auditLog)
  const inbound = Math.trunc(snapshot.waf.inboundThreshold)
  const outbound = Math.trunc(snapshot.waf.outboundThreshold)
  const blocking = host.waf_mode === 'blocking'
  const directives = [
    'Include @coraza.conf-recommended',
    // CRS 901100/901110 set the thresholds only when unset, so this phase-1 action must come first.
    `SecAction "id:${WAF_THRESHOLD_RULE_ID},phase:1,pass,nolog,setvar:tx.inbound_anomaly_score_threshold=${inbound},setvar:tx.outbound_anomaly_score_threshold=${outbound}"`,
    'Include @crs-setup.conf.example',
    'Include @owasp_crs/*.conf',
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
  return { handler: 'waf', load_owasp_crs: true, directives: directives.join('\n') }
}
