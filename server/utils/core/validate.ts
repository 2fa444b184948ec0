import { getRequestHeader, readRawBody, type H3Event } from 'h3'
import { z, type ZodType } from 'zod'
import { badRequest, payloadTooLarge } from './errors'

export const JSON_BODY_LIMIT_BYTES = 1024 * 1024

/** "field.path: problem" for the first issue, in words an operator can act on. */
export function describeZodError(error: z.ZodError): string {
  const issue = error.issues[0]!
  const path = issue.path.length ? issue.path.join('.') : 'body'
  if (issue.code === 'unrecognized_keys') {
    const where = issue.path.length ? `${issue.path.join('.')}: ` : ''
    return `${where}unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`
  }
  if (issue.code === 'invalid_type' && /received undefined/.test(issue.message)) return `${path}: is required`
  return `${path}: ${issue.message}`
}

export function parseWith<T>(schema: ZodType<T>, value: unknown): T {
  const r = schema.safeParse(value)
  if (!r.success) throw badRequest(describeZodError(r.error))
  return r.data
}

/** Reads a JSON body (1 MiB at most) and validates it; every failure is a 4xx with {error}. */
export async function readValidatedJson<T>(event: H3Event, schema: ZodType<T>): Promise<T> {
  const raw = await readRawBody(event, false)
  if (raw && raw.length > JSON_BODY_LIMIT_BYTES) throw payloadTooLarge(JSON_BODY_LIMIT_BYTES)
  const type = getRequestHeader(event, 'content-type') ?? ''
  if (raw && raw.length && type && !/application\/(.+\+)?json/i.test(type))
    throw badRequest('request body must be JSON: send Content-Type: application/json')
  let value: unknown = {}
  if (raw && raw.length) {
    try { value = JSON.parse(raw.toString('utf8')) } catch { throw badRequest('request body is not valid JSON') }
  }
  return parseWith(schema, value)
}

export function parseIdParam(value: string | undefined, kind = 'id'): number {
  if (!value || !/^[1-9]\d{0,15}$/.test(value)) throw badRequest(`${kind}: must be a positive integer`)
  return Number(value)
}

/** Printable text without control characters, bounded in length. */
export const safeText = (max: number) =>
  z.string().max(max, `must be at most ${max} characters`)
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters')

export const emailSchema = z.string().trim().toLowerCase().max(254, 'must be at most 254 characters')
  .regex(/^[^\s@"'<>\\]+@[^\s@"'<>\\]+\.[^\s@"'<>\\]+$/, 'must be a valid email address')

const _GO_DURATION_UNITS_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/**
 * A Go duration ("15s", "1m30s", "1.5h", or "-2s" as the local API words an
 * expired decision's time left) in milliseconds; null when Go would not parse it the same way.
 */
export function parseGoDurationMs(text: string): number | null {
  const sign = text.startsWith('-') ? -1 : 1
  const body = sign < 0 ? text.slice(1) : text
  if (!/^(\d+(\.\d+)?(ns|us|µs|μs|ms|s|m|h))+$/.test(body)) return null
  let total = 0
  for (const [, value, unit] of body.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|μs|ms|s|m|h)/g)) total += Number(value) * _GO_DURATION_UNITS_MS[unit!]!
  return sign * total
}
