import type { logs } from '../../../db/schema'

export type LogRecord = typeof logs.$inferSelect

export function presentLog(r: LogRecord) {
  return {
    id: r.id, ts: new Date(r.tsMs).toISOString(), source: r.source, host_id: r.hostId, host_domain: r.hostDomain, rule_id: r.ruleId,
    status: r.status, method: r.method, path: r.path, remote_ip: r.remoteIp, user_agent: r.userAgent, level: r.level,
    message: r.message, raw: r.raw, duration: r.durationMs, waf_rule_id: r.wafRuleId, waf_severity: r.wafSeverity,
    waf_anomaly_score: r.wafAnomalyScore, country: r.country, actor: r.actor,
  }
}
