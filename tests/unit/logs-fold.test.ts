import { describe, expect, it } from 'vitest'
import { getClient, runWrite } from '../../server/utils/core/db'
import { foldGroup } from '../../server/utils/logs/fold'
import { PARSERS, type LogSource, type ParseContext } from '../../server/utils/logs/parse'
import { getLog, listLogs } from '../../server/utils/logs/query'
import { insertStatements } from '../../server/utils/logs/writer'
import { useMigratedDatabase } from '../support/migrated-db'

// One row per request (server/utils/logs/fold.ts) on a real libSQL file: the ingester's
// parse -> fold -> commit of each group, with the three files read in either order. The real
// proxy's lines are covered by tests/integration/logs.one-row.test.ts; here the order is chosen.

useMigratedDatabase('logs-fold-')
const ctx: ParseContext = { hostIdOf: () => 1, countryOf: () => null }
const T0 = Date.UTC(2026, 10, 28, 12, 0, 0)

/** The three lines of one request: `startMs` its start, blocked by rule 942100 when `waf`. */
function linesOf(path: string, ip: string, startMs: number, waf: boolean) {
  const request = { client_ip: ip, method: 'GET', host: 'fold.example.test', uri: path, headers: {} }
  const status = waf ? 403 : 502
  return {
    caddy_access: JSON.stringify({
      level: 'info',
      ts: (startMs + 3) / 1000,
      logger: 'http.log.access.host_1',
      msg: 'handled request',
      request,
      duration: 0.003,
      status,
    }),
    caddy_error: JSON.stringify({
      level: 'debug',
      ts: (startMs + 2) / 1000,
      logger: 'http.log.error.host_1',
      msg: waf ? 'interruption' : 'dial tcp 127.0.0.1:9: connect: connection refused',
      request,
      status,
    }),
    waf_audit: waf
      ? JSON.stringify({
          transaction: {
            unix_timestamp: startMs * 1e6,
            client_ip: ip,
            server_id: 'fold.example.test',
            is_interrupted: true,
            request: { method: 'GET', uri: path, headers: { host: ['fold.example.test'] } },
            response: { status: 0 },
          },
          messages: [
            { message: 'SQL Injection Attack', data: { id: 942100, severity: 2, msg: 'SQL Injection Attack Detected via libinjection' } },
            {
              message: 'Inbound Anomaly Score Exceeded (Total Score: 5)',
              data: { id: 949110, severity: 0, msg: 'Inbound Anomaly Score Exceeded (Total Score: 5)' },
            },
          ],
        })
      : null,
  }
}

/** What the ingester does with one group of one file: parse, fold, then insert and update in one transaction. */
async function ingest(source: LogSource, lines: string[]): Promise<void> {
  const rows = lines.map((l) => PARSERS[source](l, ctx, T0))
  const fold = await foldGroup(source, rows)
  await runWrite(() => getClient().batch([...insertStatements(rows, false), ...fold.statements], 'write'))
}

const ORDERS: Array<Array<Exclude<LogSource, 'layer4'>>> = [
  ['caddy_access', 'caddy_error', 'waf_audit'],
  ['waf_audit', 'caddy_error', 'caddy_access'],
  ['caddy_error', 'caddy_access', 'waf_audit'],
]

describe('one row per request, whichever file is read first', () => {
  ORDERS.forEach((order, n) => {
    it(`order ${order.join(' -> ')}: one access row with the verdict; the WAF and error rows point at it`, async () => {
      const ip = `203.0.113.${10 + n}`
      // Two identical blocked requests from one client, 50 ms apart, and a refused one.
      const a = linesOf(`/q-${n}?id=1%27%20OR%201=1`, ip, T0 + n * 1000, true)
      const b = linesOf(`/q-${n}?id=1%27%20OR%201=1`, ip, T0 + n * 1000 + 50, true)
      const c = linesOf(`/down-${n}`, ip, T0 + n * 1000 + 100, false)
      for (const source of order)
        await ingest(
          source,
          [a, b, c].map((l) => l[source]).filter((l): l is string => l !== null),
        )

      const { rows } = await listLogs({ remote_ip: ip })
      expect(rows.map((r) => [r.source, r.status, r.waf_rule_id, r.waf_severity, r.waf_anomaly_score])).toEqual([
        ['caddy_access', 502, null, null, null],
        ['caddy_access', 403, 942100, 'CRITICAL', 5],
        ['caddy_access', 403, 942100, 'CRITICAL', 5],
      ])
      // Each access row got its own request's rows: the WAF rows by their start, one each.
      const details = await Promise.all(rows.map((r) => getLog(r.id)))
      const foldedSources = details.map((d) => ('folded' in d ? d.folded.map((f) => f.source).sort() : []))
      expect(foldedSources).toEqual([['caddy_error'], ['caddy_error', 'waf_audit'], ['caddy_error', 'waf_audit']])
      const wafStarts = details.slice(1).map((d) => ('folded' in d ? Date.parse(d.folded.find((f) => f.source === 'waf_audit')!.ts) : 0))
      expect(wafStarts).toEqual([T0 + n * 1000 + 50, T0 + n * 1000])
      // A source filter still lists every row, each naming its access row.
      const waf = (await listLogs({ remote_ip: ip, source: 'waf_audit' })).rows
      expect(waf.map((r) => r.request_log_id)).toEqual([rows[1]!.id, rows[2]!.id])
      // The WAF filters find the access rows in the default list.
      expect((await listLogs({ remote_ip: ip, waf_rule_id: '942100' })).rows.map((r) => r.source)).toEqual(['caddy_access', 'caddy_access'])
    })
  })

  it('another client, method or a time outside the request is not folded', async () => {
    const ip = '203.0.113.99'
    const a = linesOf('/alone', ip, T0 + 60_000, true)
    await ingest('caddy_access', [a.caddy_access])
    // The same path from another address, and the same client 10 s later: not this request.
    const other = linesOf('/alone', '203.0.113.98', T0 + 60_000, true)
    const later = linesOf('/alone', ip, T0 + 70_000, true)
    await ingest('waf_audit', [other.waf_audit!, later.waf_audit!])
    const rows = (await listLogs({ path: '/alone' })).rows
    expect(rows.map((r) => [r.source, r.remote_ip, r.waf_rule_id])).toEqual([
      ['waf_audit', ip, 942100],
      ['waf_audit', '203.0.113.98', 942100],
      ['caddy_access', ip, null],
    ])
  })
})
