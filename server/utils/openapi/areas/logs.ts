import { z } from 'zod'
import { SOURCES } from '../../logs/filters'
import { logFilterQuery, logListQuery, logTimeseriesQuery } from '../../logs/query-schema'
import { idParam, ok, operation, timestamp } from '../registry'

// Area: logs. The query schemas are the ones the routes validate with
// (logs/query-schema.ts); filters.ts parses what a pattern cannot check.

const nullable = <T extends z.ZodType>(t: T) => z.union([t, z.null()])

export const logRowSchema = z.strictObject({
  id: z.number().int(),
  ts: timestamp(),
  source: z.enum(SOURCES),
  host_id: nullable(z.number().int()),
  host_domain: nullable(z.string()),
  rule_id: nullable(z.number().int()),
  status: nullable(z.number().int()),
  method: nullable(z.string()),
  path: nullable(z.string()),
  remote_ip: nullable(z.string()),
  user_agent: nullable(z.string()),
  level: nullable(z.string()),
  message: nullable(z.string()),
  raw: nullable(z.string()),
  duration: nullable(z.number()).describe('milliseconds'),
  waf_rule_id: nullable(z.number().int()),
  waf_severity: nullable(z.string()),
  waf_anomaly_score: nullable(z.number()),
  waf_rules: nullable(
    z.array(
      z.strictObject({
        id: z.number().int(),
        severity: nullable(z.string()),
        score: z.number().int().describe('points this rule added to the inbound anomaly score'),
        msg: nullable(z.string()),
      }),
    ),
  ).describe('waf_audit rows: every rule the request matched, in match order'),
  country: nullable(z.string()),
  asn: nullable(z.number().int()).describe("the client's AS number from asn.mmdb at ingestion (access rows; null when unknown or private)"),
  actor: nullable(z.string()),
  node_id: nullable(z.number().int()).describe(
    'the proxy node that wrote the row (null on audit rows and rows from before nodes were recorded)',
  ),
  node: nullable(z.string()).describe("that node's name when the row was ingested"),
  request_log_id: nullable(z.number().int()).describe(
    'on a WAF or proxy-error row: the access row of the same request it is folded into (one row per request, docs/logs.md)',
  ),
  request_id: nullable(z.string()).describe(
    "on an access row: the proxy's id of the request, the one its refusal page shows (null when no page used it)",
  ),
  stream_id: nullable(z.number().int()).describe('on a layer4 row: the stream of the connection (docs/streams.md "Connection rows")'),
  stream: nullable(z.string()).describe("that stream's name when the row was ingested"),
  upstream: nullable(z.string()).describe('on a layer4 row: the dialled upstream, when the proxy says it'),
  bytes_in: nullable(z.number().int()).describe('on a layer4 row: bytes read from the client (toward the upstream)'),
  bytes_out: nullable(z.number().int()).describe('on a layer4 row: bytes written to the client'),
})

/** One row; an access row also lists the rows folded into it. */
export const logDetailSchema = logRowSchema.extend({
  folded: z.array(logRowSchema).optional().describe("on an access row: the WAF's and the proxy's error rows of the same request"),
})

export const timeseriesPointSchema = z.strictObject({
  ts: timestamp(),
  total: z.number().int(),
  '2xx': z.number().int(),
  '3xx': z.number().int(),
  '4xx': z.number().int(),
  '5xx': z.number().int(),
})

const scanLimited = { 'X-Logs-Scan-Limited': 'true when a regex/CIDR filter stopped at its scan bound' }

export const logsOperations = [
  operation({
    method: 'get',
    path: '/api/logs',
    access: 'session',
    summary: 'Log rows, newest first',
    description:
      "Without a `source` filter, one row per request: a WAF or proxy-error row folded into its access row is left out (the access row carries the WAF's verdict; GET /api/logs/{id} lists them). A `source` filter lists every row of those sources.",
    query: logListQuery,
    responses: { 200: ok('rows', z.array(logRowSchema), { headers: scanLimited }) },
  }),
  operation({
    method: 'get',
    path: '/api/logs/{id}',
    access: 'session',
    summary: 'One log row',
    params: idParam('log row'),
    responses: { 200: ok('the row', logDetailSchema), 404: ok('no such row') },
  }),
  operation({
    method: 'get',
    path: '/api/logs/stats',
    access: 'session',
    summary: 'Statistics of the filtered rows',
    query: logFilterQuery,
    responses: {
      200: ok(
        'stats',
        z.strictObject({
          total: z.number().int(),
          by_status_class: z.record(z.string(), z.number().int()),
          by_source: z.record(z.string(), z.number().int()),
          avg_duration_ms: nullable(z.number()),
          p95_duration_ms: nullable(z.number()),
          top_hosts: z.array(z.strictObject({ host_domain: z.string(), count: z.number().int() })),
          top_paths: z.array(z.strictObject({ path: z.string(), count: z.number().int() })),
        }),
        { headers: scanLimited },
      ),
    },
  }),
  operation({
    method: 'get',
    path: '/api/logs/timeseries',
    access: 'session',
    summary: 'Counts per time bucket, oldest first (buckets with rows only)',
    query: logTimeseriesQuery,
    responses: { 200: ok('points', z.array(timeseriesPointSchema), { headers: scanLimited }) },
  }),
  operation({
    method: 'get',
    path: '/api/logs/tail',
    access: 'session',
    summary: 'Live rows as server-sent events',
    query: logFilterQuery,
    description:
      "Each new row matching the filter as `event: log` with the row (as in GET /api/logs) as JSON `data`; a row sent before comes again when it changed (an access row given the WAF's verdict). Without a `source` filter, a WAF or proxy-error row folded into its access row comes as `event: folded` with `{id, request_log_id}`. `: connected` at once and `: heartbeat` every 15 s.",
    responses: {
      200: ok('an event stream', undefined, { contentType: 'text/event-stream' }),
      429: ok(
        'this session already holds 4 live tails, or the panel 64 (close one and try again); or too many invalid API tokens from this address',
        undefined,
        { headers: { 'Retry-After': 'seconds to wait' } },
      ),
    },
  }),
]
