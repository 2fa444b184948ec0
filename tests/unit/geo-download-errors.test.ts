import { describe, expect, it } from 'vitest'
import { fetchFailureCause, geoDownloadFailure, shownUrl } from '../../server/utils/geo/download-errors'

// The sentence a failed geolocation download leaves for the operator (docs/geo-and-country-bans.md).

describe('shownUrl', () => {
  it('drops user info and hides credential-looking query values, keeping the rest', () => {
    expect(shownUrl('https://user:pw-secret@download.example.test/geo?edition_id=GeoLite2-Country&license_key=abc123&suffix=tar.gz')).toBe(
      'https://download.example.test/geo?edition_id=GeoLite2-Country&license_key=%5Bredacted%5D&suffix=tar.gz',
    )
    expect(shownUrl('http://127.0.0.1:1/country.mmdb')).toBe('http://127.0.0.1:1/country.mmdb')
  })
})

describe('fetchFailureCause', () => {
  it('reads undici\'s cause instead of its bare "fetch failed"', () => {
    expect(fetchFailureCause(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }))).toBe(
      'connection refused: nothing listens there',
    )
    expect(fetchFailureCause(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ENOTFOUND' } }))).toBe(
      'the host name does not resolve',
    )
    expect(fetchFailureCause(Object.assign(new Error('aborted'), { name: 'TimeoutError' }))).toBe('no complete answer in time')
    expect(fetchFailureCause(Object.assign(new TypeError('fetch failed'), { cause: { code: 'EWHATEVER' } }))).toBe('EWHATEVER')
  })
})

describe('geoDownloadFailure', () => {
  it('names the database, the URL, the cause and the setting; a kept file only when there is one', () => {
    const url = 'http://127.0.0.1:1/asn.mmdb?token=t0ken-value'
    const none = geoDownloadFailure('asn', url, `refused by ${url}`, false)
    expect(none).toBe(
      'AS number database: the download from http://127.0.0.1:1/asn.mmdb?token=%5Bredacted%5D failed (refused by http://127.0.0.1:1/asn.mmdb?token=%5Bredacted%5D). Check "AS number database URL" in Settings -> Geolocation.',
    )
    expect(geoDownloadFailure('country', 'http://x.example.test/c.mmdb', 'it answered 404 Not Found', true)).toBe(
      'Country database: the download from http://x.example.test/c.mmdb failed (it answered 404 Not Found). Check "Country database URL" in Settings -> Geolocation. The file downloaded before stays in use.',
    )
    expect(geoDownloadFailure('country', '', 'no URL', false)).toBe(
      'Country database: no download URL is set. Check "Country database URL" in Settings -> Geolocation.',
    )
  })
})
