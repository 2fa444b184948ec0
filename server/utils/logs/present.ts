import type { Row } from '@libsql/client'
import type { logs } from '../../../db/schema'
import type { WafRuleHit } from './parse'

export type LogRecord = typeof logs.$inferSelect

/** A row as the API shows it: snake_case, ts as RFC 3339, duration in ms. */
export function presentLog(r: LogRecord) {
  return {
    id: r.id,
    ts: new Date(r.tsMs).toISOString(),
    source: r.source,
    host_id: r.hostId,
    host_domain: r.hostDomain,
    rule_id: r.ruleId,
    status: r.status,
    method: r.method,
    path: r.path,
    remote_ip: r.remoteIp,
    user_agent: r.userAgent,
    level: r.level,
    message: r.message,
    raw: r.raw,
    duration: r.durationMs,
    waf_rule_id: r.wafRuleId,
    waf_severity: r.wafSeverity,
    waf_anomaly_score: r.wafAnomalyScore,
    waf_rules: wafRulesOf(r.wafRules),
    country: r.country,
    actor: r.actor,
    node_id: r.nodeId,
    node: r.nodeName,
    request_log_id: r.requestLogId,
    request_id: r.requestId,
    // A stream's connection (source layer4): the stream's id and its name when ingested.
    stream_id: r.streamId,
    stream: r.streamName,
    upstream: r.upstream,
    bytes_in: r.bytesIn,
    bytes_out: r.bytesOut,
    asn: r.asn,
  }
}

/** The stored JSON of logs.waf_rules as a list (null: not a waf_audit row, or ingested before the column). */
export function wafRulesOf(text: string | null): WafRuleHit[] | null {
  if (!text) return null
  try {
    const v = JSON.parse(text)
    return Array.isArray(v) ? (v as WafRuleHit[]) : null
  } catch {
    return null
  }
}

const _num = (v: unknown) => (v === null || v === undefined ? null : Number(v))
const _text = (v: unknown) => (v === null || v === undefined ? null : String(v))

/** A `SELECT * FROM logs` row of the libSQL client as a record. */
export function recordOf(r: Row): LogRecord {
  return {
    id: Number(r.id),
    tsMs: Number(r.ts_ms),
    source: String(r.source) as LogRecord['source'],
    hostId: _num(r.host_id),
    hostDomain: _text(r.host_domain),
    ruleId: _num(r.rule_id),
    status: _num(r.status),
    method: _text(r.method),
    path: _text(r.path),
    remoteIp: _text(r.remote_ip),
    userAgent: _text(r.user_agent),
    level: _text(r.level),
    message: _text(r.message),
    raw: _text(r.raw),
    durationMs: _num(r.duration_ms),
    wafRuleId: _num(r.waf_rule_id),
    wafSeverity: _text(r.waf_severity),
    wafAnomalyScore: _num(r.waf_anomaly_score),
    wafRules: _text(r.waf_rules),
    country: _text(r.country),
    actor: _text(r.actor),
    nodeId: _num(r.node_id),
    nodeName: _text(r.node_name),
    requestLogId: _num(r.request_log_id),
    requestId: _text(r.request_id),
    streamId: _num(r.stream_id),
    streamName: _text(r.stream_name),
    upstream: _text(r.upstream),
    bytesIn: _num(r.bytes_in),
    bytesOut: _num(r.bytes_out),
    asn: _num(r.asn),
  }
}
