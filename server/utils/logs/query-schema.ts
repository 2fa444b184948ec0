import { z } from 'zod'
import { SOURCES } from './filters'

// The query parameters of the log routes as one strict schema per route: the
// routes validate with them before compileLogFilter (filters.ts) parses the
// lists, status expressions, regex and CIDR, and the OpenAPI document shows the
// same patterns. A list is comma-separated; an empty value means no filter.

const _list = (item: string) => new RegExp(`^(\\s*(${item})\\s*(,\\s*(${item})\\s*)*)?$`)
const _text = (max: number) => z.string().max(max, `must be at most ${max} characters`)

export const logFilterQuery = z.strictObject({
  source: _text(200)
    .regex(_list(SOURCES.join('|')), `must be a comma list of ${SOURCES.join(', ')}`)
    .optional()
    .describe(`comma list of ${SOURCES.join(', ')}`),
  host_id: _text(2000)
    .regex(_list('[1-9]\\d{0,9}'), 'must be positive integers separated by commas')
    .optional()
    .describe('comma list of host ids (OR-joined with host_domain)'),
  host_domain: _text(2000).optional().describe('comma list of domains (OR-joined with host_id)'),
  rule_id: _text(2000)
    .regex(_list('[1-9]\\d{0,9}'), 'must be positive integers separated by commas')
    .optional()
    .describe('comma list of panel rule ids'),
  status: _text(200)
    .regex(
      _list('[1-5]xx|[1-5]XX|[1-5]\\d\\d(-[1-5]\\d\\d)?'),
      'must be a status (100-599), a class such as 4xx, a range such as 500-504, or a comma list of those',
    )
    .optional()
    .describe('404, a class such as 4xx, a range such as 500-504, or a comma list of those'),
  method: _text(200).regex(_list('[A-Za-z]{1,16}'), 'must be HTTP methods separated by commas').optional(),
  path: _text(2000).optional().describe('substring, or re:<regex>'),
  remote_ip: _text(64).optional().describe('substring, or a CIDR'),
  level: _text(200).optional(),
  query: _text(2000).optional().describe('free text across path, user_agent, message and raw'),
  waf_rule_id: _text(2000)
    .regex(_list('[1-9]\\d{0,9}'), 'must be positive integers separated by commas')
    .optional()
    .describe('comma list of WAF rule ids'),
  waf_severity: _text(200)
    .regex(_list('[A-Za-z]{1,16}'), 'must be severity names such as CRITICAL separated by commas')
    .optional()
    .describe('CRITICAL, ERROR, WARNING, NOTICE...'),
  node_id: _text(2000)
    .regex(_list('[1-9]\\d{0,9}'), 'must be positive integers separated by commas')
    .optional()
    .describe('comma list of proxy node ids (GET /api/nodes)'),
  request_id: _text(2000)
    .regex(
      _list('[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}'),
      'must be request ids as a refusal page shows them (8-4-4-4-12 hexadecimal digits), separated by commas',
    )
    .optional()
    .describe("comma list of request ids, as the proxy's refusal pages show them"),
  actor: _text(2000)
    .optional()
    .describe('comma list of signed-in users (their email, exact): the access rows of requests a protected host admitted them on'),
  from: _text(40)
    .regex(
      /^(\d{1,15}|\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?)?$/,
      'must be an RFC 3339 time (2026-11-20T10:00:00Z) or epoch milliseconds',
    )
    .optional()
    .describe('RFC 3339 or epoch milliseconds'),
  to: _text(40)
    .regex(
      /^(\d{1,15}|\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?)?$/,
      'must be an RFC 3339 time (2026-11-20T10:00:00Z) or epoch milliseconds',
    )
    .optional()
    .describe('RFC 3339 or epoch milliseconds'),
})

export const logListQuery = logFilterQuery.extend({
  limit: z
    .string()
    .regex(/^([1-9]\d{0,2}|1000)?$/, 'must be an integer from 1 to 1000')
    .optional()
    .describe('1 to 1000, default 100'),
  before_id: z
    .string()
    .regex(/^([1-9]\d{0,15})?$/, 'must be a positive integer')
    .optional()
    .describe('rows with a smaller id (paging)'),
})

export const logTimeseriesQuery = logFilterQuery.extend({
  bucket: z.enum(['minute', 'hour', 'day'], { message: 'must be minute, hour or day' }).optional().describe('default hour'),
})
