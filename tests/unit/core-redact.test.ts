import { describe, expect, it } from 'vitest'
import { REDACTED, makeRedactor, redactJson, redactText } from '../../server/utils/core/redact'

// The one function every proxy and engine text passes through (proxy rejections,
// admin and local API errors) before a response, a log line or an audit row.

describe('redactText', () => {
  it('replaces every occurrence of every secret', () => {
    const token = 'Abcdefghij0123456789_-ABCDEFGHIJ0123456789'
    const text = `provision dns.providers.cloudflare: API token '${token}' appears invalid; token=${token}`
    expect(redactText(text, [token, 'bouncer-key-123'])).toBe(
      `provision dns.providers.cloudflare: API token '${REDACTED}' appears invalid; token=${REDACTED}`,
    )
  })

  it('also finds the JSON-escaped and URL-encoded forms', () => {
    const secret = 'pa"ss/wo+rd\\x'
    expect(redactText(`{"password":${JSON.stringify(secret)}}`, [secret])).toBe(`{"password":"${REDACTED}"}`)
    expect(redactText(`GET /x?key=${encodeURIComponent(secret)}`, [secret])).toBe(`GET /x?key=${REDACTED}`)
  })

  it('replaces a longer secret whole when a shorter one is inside it', () => {
    expect(redactText('key abcdef-123456', ['abcdef', 'abcdef-123456'])).toBe(`key ${REDACTED}`)
  })

  it('leaves text without secrets, and ignores empty or very short values', () => {
    expect(redactText('config is unchanged', ['', 'a', 'abc', 'not-in-text'])).toBe('config is unchanged')
  })
})

describe('makeRedactor — one redactor for a batch of texts', () => {
  it('redacts a TSIG secret (base64 with + / =) in raw, JSON and URL-encoded forms, line after line', () => {
    const tsig = 'qGz5YuwiOJmNxKLgeqxYLbfFVHOBdYjr+WuJ/FA6qPs='
    const redact = makeRedactor([tsig])
    expect(redact(`{"msg":"x","key":${JSON.stringify(tsig)}}`)).toBe(`{"msg":"x","key":"${REDACTED}"}`)
    expect(redact(`update?key=${encodeURIComponent(tsig)}`)).toBe(`update?key=${REDACTED}`)
    expect(redact('no secret here')).toBe('no secret here')
  })
})

describe("redactJson — an event's details before a notification", () => {
  const tsig = 'qGz5YuwiOJmNxKLgeqxYLbfFVHOBdYjr+WuJ/FA6qPs='
  const redact = makeRedactor([tsig, 'smtp-password-1'])

  it('replaces secrets inside nested strings and keeps the shape', () => {
    const details = { domain: 'www.example.test', error: `update signed with ${tsig} refused`, nested: { list: ['smtp-password-1', 2] } }
    expect(redactJson(details, redact)).toEqual({
      domain: 'www.example.test',
      error: `update signed with ${REDACTED} refused`,
      nested: { list: [REDACTED, 2] },
    })
  })

  it('returns the very same object when nothing is secret', () => {
    const details = { domain: 'www.example.test' }
    expect(redactJson(details, redact)).toBe(details)
  })

  it('keeps a text whose secret spans JSON syntax as one redacted string', () => {
    const out = redactJson({ a: 'x' }, makeRedactor(['{"a":"x"}'])) as { redacted: string }
    expect(out).toEqual({ redacted: REDACTED })
  })
})
