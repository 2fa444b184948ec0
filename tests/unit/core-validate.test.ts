import { createECDH } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  assertCleanJson,
  decodeJsonBody,
  emailSchema,
  jsonNestsDeeperThan,
  MAX_JSON_DEPTH,
  ipOrCidrText,
  parseQueryWith,
  parseWith,
  safeText,
  urlSchema,
} from '../../server/utils/core/validate'
import { pushSubscriptionBody } from '../../server/utils/ops/notify/push'
import { settingsPatchBody } from '../../server/utils/core/settings'
import { clientErrorResponse } from '../../server/utils/core/client-errors'

// One test per rule of the validation layer (server/utils/core/validate.ts).

const statusOf = (fn: () => unknown): { status: number; message: string } | null => {
  try {
    fn()
    return null
  } catch (err: any) {
    return { status: err.statusCode, message: err.message }
  }
}

describe('JSON bodies are decoded strictly', () => {
  it('refuses invalid UTF-8 instead of storing U+FFFD', () => {
    const raw = Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('b"}')])
    expect(statusOf(() => decodeJsonBody(raw))).toEqual({ status: 400, message: expect.stringMatching(/not valid UTF-8/) })
    // An overlong encoding of "/" and a lone surrogate half are invalid too.
    expect(statusOf(() => decodeJsonBody(Buffer.from([0x22, 0xc0, 0xaf, 0x22])))?.message).toMatch(/UTF-8/)
    expect(statusOf(() => decodeJsonBody(Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22])))?.message).toMatch(/UTF-8/)
  })

  it('accepts valid UTF-8 beyond ASCII', () => {
    expect(decodeJsonBody(Buffer.from('{"name":"Zoë ☃ 𝄞"}'))).toEqual({ name: 'Zoë ☃ 𝄞' })
  })

  it('refuses text that is not JSON', () => {
    expect(statusOf(() => decodeJsonBody(Buffer.from('{"a":')))?.message).toBe('body: is not valid JSON; send one JSON object')
  })
})

describe('nesting depth is bounded before anything walks the value', () => {
  // Regression (issue 33, review Info "deeply nested JSON"): a 1 MB body of nested arrays to the
  // public login route answered 500 "internal error"; assertCleanJson's recursion overflowed the stack.
  it('a 1 MB body of nested arrays is a 400 naming the limit, not a stack overflow', () => {
    const deep = Buffer.from('['.repeat(500_000) + ']'.repeat(500_000))
    expect(statusOf(() => decodeJsonBody(deep))).toEqual({
      status: 400,
      message: `body: nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects; send a flatter document`,
    })
    const objects = Buffer.from(`${'{"a":'.repeat(200_000)}1${'}'.repeat(200_000)}`)
    expect(statusOf(() => decodeJsonBody(objects))?.status).toBe(400)
  })

  it('accepts exactly the limit, refuses one more', () => {
    const nested = (n: number) => '['.repeat(n) + ']'.repeat(n)
    expect(statusOf(() => decodeJsonBody(Buffer.from(nested(MAX_JSON_DEPTH))))).toBeNull()
    expect(statusOf(() => decodeJsonBody(Buffer.from(nested(MAX_JSON_DEPTH + 1))))?.status).toBe(400)
  })

  it('brackets inside strings, escaped quotes included, do not count', () => {
    const text = JSON.stringify({ note: `${'['.repeat(1000)}\\"${'{'.repeat(1000)}`, list: [[1]] })
    // The object, `list` and its inner array: three levels.
    expect(jsonNestsDeeperThan(text, 3)).toBe(false)
    expect(jsonNestsDeeperThan(text, 2)).toBe(true)
  })

  it('a value parsed elsewhere (a query) gets the same bound in assertCleanJson', () => {
    let value: unknown = 'x'
    for (let i = 0; i < MAX_JSON_DEPTH + 1; i++) value = [value]
    expect(statusOf(() => assertCleanJson(value))?.message).toMatch(/nests deeper than 64 levels/)
  })
})

describe('prototype keys are refused at any depth, never stripped', () => {
  it.each(['__proto__', 'constructor', 'prototype'])('%s', (key) => {
    expect(statusOf(() => decodeJsonBody(Buffer.from(`{"${key}":{"admin":true}}`)))).toEqual({
      status: 400,
      message: `body: the key "${key}" is not allowed`,
    })
    expect(statusOf(() => decodeJsonBody(Buffer.from(`{"config":{"list":[{"${key}":1}]}}`)))?.message).toBe(
      `config.list.0: the key "${key}" is not allowed`,
    )
  })

  it('leaves ordinary keys that merely contain the words', () => {
    expect(() => assertCleanJson({ constructor_name: 1, my_prototype: 2 })).not.toThrow()
  })
})

describe('control characters', () => {
  it.each([
    ['NUL', '\u0000'],
    ['U+0001', '\u0001'],
    ['BEL', '\u0007'],
    ['ESC', '\u001b'],
    ['DEL', '\u007f'],
    ['CR', '\r'],
  ])('%s anywhere in a body is refused, naming the field', (_name, ch) => {
    expect(statusOf(() => assertCleanJson({ a: { b: [`x${ch}y`] } }))).toEqual({
      status: 400,
      message: expect.stringMatching(/^a\.b\.0: must not contain control characters/),
    })
  })

  it('a key with a control character is refused', () => {
    expect(statusOf(() => assertCleanJson({ 'a\u0000': 1 }))?.status).toBe(400)
  })

  it('tab and newline pass the body check; single-line text refuses them, multi-line text takes them', () => {
    expect(() => assertCleanJson({ a: 'x\ty\nz' })).not.toThrow()
    expect(safeText(10).safeParse('a\nb').success).toBe(false)
    expect(safeText(10).safeParse('a\tb').success).toBe(false)
    expect(safeText(10, { multiline: true }).safeParse('a\n\tb').success).toBe(true)
    expect(safeText(10, { multiline: true }).safeParse('a\u0000b').success).toBe(false)
    expect(safeText(10, { multiline: true }).safeParse('a\rb').success).toBe(false)
  })

  it('safe text is bounded and may require content', () => {
    expect(safeText(3).safeParse('abcd').success).toBe(false)
    expect(safeText(3, { min: 1 }).safeParse('').success).toBe(false)
    expect(safeText(3).safeParse('').success).toBe(true)
  })

  it('query parameters are checked like a body', () => {
    const q = z.strictObject({ q: z.string().optional() })
    expect(statusOf(() => parseQueryWith(q, { q: 'a\u0001' }))?.message).toMatch(/^q: must not contain control characters/)
    expect(statusOf(() => parseQueryWith(q, { other: '1' }))?.message).toBe('query: unknown field "other"')
    expect(parseQueryWith(q, { q: 'fine' })).toEqual({ q: 'fine' })
    expect(statusOf(() => parseQueryWith(q, JSON.parse('{"__proto__":"x"}')))?.message).toBe('query: the key "__proto__" is not allowed')
  })
})

describe('one email rule', () => {
  it.each([
    'a@example.test\u0000x',
    'a\u0007@example.test',
    'a@exa\u007fmple.test',
    'a b@example.test',
    'no-at.example.test',
    'a@nodot',
    '"a"@example.test',
  ])('refuses %j', (v) => {
    expect(emailSchema.safeParse(v).success).toBe(false)
  })

  it('trims and lower-cases what it accepts', () => {
    expect(emailSchema.parse('  Ops@Example.TEST ')).toBe('ops@example.test')
  })
})

describe('one URL rule', () => {
  it.each([
    ['not a url', 'nothing'],
    ['a scheme outside the list', 'ftp://example.test/'],
    ['javascript', 'javascript:alert(1)'],
    ['a NUL', 'https://example.test/\u0000x'],
    ['a control character', 'https://exa\u0007mple.test/'],
    ['a space', 'https://example.test/a b'],
    ['a brace', 'https://example.test/{path}'],
    ['no host', 'https://'],
    ['a quote', 'https://example.test/"'],
  ])('refuses %s', (_name, v) => {
    expect(urlSchema().safeParse(v).success).toBe(false)
  })

  it('accepts http and https by default, https only where asked', () => {
    expect(urlSchema().parse(' https://ca.example.test/dir ')).toBe('https://ca.example.test/dir')
    expect(urlSchema().safeParse('http://127.0.0.1:9/hook').success).toBe(true)
    expect(urlSchema({ schemes: ['https'] }).safeParse('http://ca.example.test/dir').success).toBe(false)
  })

  it('settings URLs: empty or a URL', () => {
    expect(parseWith(settingsPatchBody, { 'acme.ca_url': '' })).toEqual({ 'acme.ca_url': '' })
    expect(settingsPatchBody.safeParse({ 'oidc.issuer': 'https://idp.example.test\u0000' }).success).toBe(false)
    expect(settingsPatchBody.safeParse({ 'geoip.country_url': 'file:///etc/passwd' }).success).toBe(false)
  })
})

describe('IP and CIDR text', () => {
  it('takes addresses and ranges, refuses other text', () => {
    expect(ipOrCidrText().safeParse('192.0.2.0/24').success).toBe(true)
    expect(ipOrCidrText().safeParse('2001:db8::1').success).toBe(true)
    expect(ipOrCidrText({ cidr: false }).safeParse('192.0.2.0/24').success).toBe(false)
    expect(ipOrCidrText().safeParse('example.test').success).toBe(false)
  })
})

describe('every request object is strict', () => {
  it('the push subscription refuses unknown fields, and its keys are checked by pattern, size and curve', () => {
    const p256dh = createECDH('prime256v1').generateKeys().toString('base64url')
    const good = { endpoint: 'https://push.example.test/send/abc', keys: { p256dh, auth: 'A'.repeat(22) } }
    expect(pushSubscriptionBody.safeParse(good).success).toBe(true)
    // The shape of an uncompressed point (0x04 then 64 bytes), off the curve.
    expect(pushSubscriptionBody.safeParse({ ...good, keys: { ...good.keys, p256dh: `B${'A'.repeat(86)}` } }).success).toBe(false)
    expect(statusOf(() => parseWith(pushSubscriptionBody, { ...good, extra: 1 }))?.message).toBe('body: unknown field "extra"')
    expect(pushSubscriptionBody.safeParse({ ...good, keys: { ...good.keys, p256dh: 'A'.repeat(87) } }).success).toBe(false)
  })

  it('settings refuse unknown keys; a secret takes __UNCHANGED__', () => {
    expect(statusOf(() => parseWith(settingsPatchBody, { 'no.such': 1 }))?.message).toBe('body: unknown field "no.such"')
    expect(parseWith(settingsPatchBody, { 'smtp.password': '__UNCHANGED__' })).toEqual({ 'smtp.password': '__UNCHANGED__' })
  })
})

describe('requests Node refuses itself', () => {
  it('an over-long request line gets 431 with the {error} body', () => {
    const raw = clientErrorResponse('HPE_HEADER_OVERFLOW')
    expect(raw).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/)
    const body = raw.split('\r\n\r\n')[1]!
    expect(JSON.parse(body)).toEqual({ error: expect.stringMatching(/16 KiB/) })
    expect(raw).toContain(`Content-Length: ${Buffer.byteLength(body)}`)
    expect(clientErrorResponse('HPE_INVALID_METHOD')).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/)
  })
})
