import type { InStatement } from '@libsql/client'
import type { LogRow } from './parse'

// The batch writer's SQL: multi-row INSERTs of BATCH_ROWS rows, built once per
// row count and bound with positional parameters. Plain statements rather than
// drizzle's builder keep the per-row cost down (ingestion budget ≥ 30,000 rows/s).

export const BATCH_ROWS = 100

const _COLUMNS = [
  ['ts_ms', 'tsMs'],
  ['source', 'source'],
  ['host_id', 'hostId'],
  ['host_domain', 'hostDomain'],
  ['rule_id', 'ruleId'],
  ['status', 'status'],
  ['method', 'method'],
  ['path', 'path'],
  ['remote_ip', 'remoteIp'],
  ['user_agent', 'userAgent'],
  ['level', 'level'],
  ['message', 'message'],
  ['raw', 'raw'],
  ['duration_ms', 'durationMs'],
  ['waf_rule_id', 'wafRuleId'],
  ['waf_severity', 'wafSeverity'],
  ['waf_anomaly_score', 'wafAnomalyScore'],
  ['waf_rules', 'wafRules'],
  ['country', 'country'],
  ['actor', 'actor'],
  ['node_id', 'nodeId'],
  ['node_name', 'nodeName'],
  ['request_log_id', 'requestLogId'],
  ['request_id', 'requestId'],
  ['stream_id', 'streamId'],
  ['stream_name', 'streamName'],
  ['upstream', 'upstream'],
  ['bytes_in', 'bytesIn'],
  ['bytes_out', 'bytesOut'],
  ['asn', 'asn'],
] as const satisfies ReadonlyArray<readonly [string, keyof LogRow]>

const _sqlByCount = new Map<string, string>()

function _insertSql(count: number, returning: boolean): string {
  const key = `${count}:${returning}`
  let text = _sqlByCount.get(key)
  if (!text) {
    const one = `(${_COLUMNS.map(() => '?').join(',')})`
    text = `INSERT INTO logs (${_COLUMNS.map((c) => c[0]).join(',')}) VALUES ${Array(count).fill(one).join(',')}${returning ? ' RETURNING id' : ''}`
    _sqlByCount.set(key, text)
  }
  return text
}

/** INSERT statements for `rows`, BATCH_ROWS rows each; with `returning`, each statement yields the new ids in order. */
export function insertStatements(rows: LogRow[], returning: boolean): InStatement[] {
  const out: InStatement[] = []
  for (let i = 0; i < rows.length; i += BATCH_ROWS) {
    const chunk = rows.slice(i, i + BATCH_ROWS)
    const args: Array<string | number | null> = new Array(chunk.length * _COLUMNS.length)
    let k = 0
    for (const row of chunk) for (const [, key] of _COLUMNS) args[k++] = (row[key] as string | number | null | undefined) ?? null
    out.push({ sql: _insertSql(chunk.length, returning), args })
  }
  return out
}
