import { describe, expect, it } from 'vitest'
import { FORWARD_AUTH_ENCODED_PREFIX, forwardAuthHeaderValue } from '../../server/utils/auth/forward-auth'
import { loginBackoffMs } from '../../server/utils/auth/attempts'

// X-Auth-* values (issue 33, item 9): ASCII byte-identical, anything else as
// RFC 8187's ext-value; the end-to-end check through the proxy is in
// tests/integration/proxy.forward-auth.test.ts.

const decode = (v: string) =>
  v.startsWith(FORWARD_AUTH_ENCODED_PREFIX) ? decodeURIComponent(v.slice(FORWARD_AUTH_ENCODED_PREFIX.length)) : v

describe('forwardAuthHeaderValue', () => {
  it('leaves printable ASCII as it is', () => {
    for (const v of ['admin@example.test', 'Jane Doe', 'local', "O'Brien (ops) 100%", '']) expect(forwardAuthHeaderValue(v)).toBe(v)
  })

  it('encodes anything else, and round-trips through decodeURIComponent', () => {
    expect(forwardAuthHeaderValue('Łukasz Żółć')).toBe("UTF-8''%C5%81ukasz%20%C5%BB%C3%B3%C5%82%C4%87")
    expect(forwardAuthHeaderValue('José')).toBe("UTF-8''Jos%C3%A9") // Latin-1: no raw bytes (mojibake) any more
    for (const v of ['Łukasz Żółć', 'łukasz.żółć@example.test', '李小龙', '😀 emoji', ' lead', 'trail ', "it's (100%) *x*", 'tab\there'])
      expect(decode(forwardAuthHeaderValue(v))).toBe(v)
  })

  it('encodes only header-safe bytes: what Node accepts and HTTP keeps', () => {
    for (const v of ['Łukasz Żółć', '李小龙', ' x ', 'a\u0000b', '\u00ff'])
      expect(forwardAuthHeaderValue(v)).toMatch(/^UTF-8''[A-Za-z0-9!#$&+\-.^_`|~%]*$/)
  })

  it('encodes an ASCII value that starts with the marker, in any case, so that no plain value passes for another', () => {
    for (const v of ["UTF-8''%C5%81ukasz", "utf-8''x"]) {
      expect(forwardAuthHeaderValue(v)).not.toBe(v)
      expect(decode(forwardAuthHeaderValue(v))).toBe(v)
    }
  })
})

describe('loginBackoffMs', () => {
  it('waits nothing below the free failures, then 15 s doubling up to 15 minutes', () => {
    expect([0, 4].map((n) => loginBackoffMs(n, 5))).toEqual([0, 0])
    expect([5, 6, 7, 10, 11, 12, 1000].map((n) => loginBackoffMs(n, 5) / 1000)).toEqual([15, 30, 60, 480, 900, 900, 900])
  })
})
