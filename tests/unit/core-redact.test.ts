import { describe, expect, it } from 'vitest'
import { REDACTED, redactText } from '../../server/utils/core/redact'

// The one function every proxy and engine text passes through (proxy rejections,
// admin and local API errors) before a response, a log line or an audit row.

describe('redactText', () => {
  it('replaces every occurrence of every secret', () => {
    const token = 'Abcdefghij0123456789_-ABCDEFGHIJ0123456789'
    const text = `provision dns.providers.cloudflare: API token '${token}' appears invalid; token=${token}`
    expect(redactText(text, [token, 'bouncer-key-123'])).toBe(`provision dns.providers.cloudflare: API token '${REDACTED}' appears invalid; token=${REDACTED}`)
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
