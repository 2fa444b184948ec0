import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { unusedPort } from '../support/ports'
import { startPanel, type PanelHandle } from '../support/panel'

// A geolocation download that fails says which database, the URL it tried, why,
// and the setting to change (Settings -> Geolocation); it claims a kept file only
// when there is one. Here nothing was ever downloaded, and nothing listens at the URL.

let panel: PanelHandle
let cookie: string
let deadPort: number
beforeAll(async () => {
  // A port that was free a moment ago: nothing listens there, so the connection is refused.
  deadPort = await unusedPort()
  panel = await startPanel({
    env: {
      GEOIP_COUNTRY_URL: `http://127.0.0.1:${deadPort}/country.mmdb`,
      // A credential in the URL (a license key in the query) is never repeated.
      GEOIP_ASN_URL: `http://127.0.0.1:${deadPort}/asn.mmdb?edition=asn&license_key=geo-licence-secret`,
    },
  })
  cookie = await panel.login()
})
afterAll(async () => {
  await panel?.stop()
})

describe('a geolocation download from a URL where nothing listens', () => {
  it('names the URL, the cause and the setting, and claims no previous file', async () => {
    const res = await panel.request('/api/geoip/refresh', { method: 'POST', cookie })
    expect(res.status).toBe(502)
    const country = `Country database: the download from http://127.0.0.1:${deadPort}/country.mmdb failed (connection refused: nothing listens there). Check "Country database URL" in Settings -> Geolocation.`
    const asn = `AS number database: the download from http://127.0.0.1:${deadPort}/asn.mmdb?edition=asn&license_key=%5Bredacted%5D failed (connection refused: nothing listens there). Check "AS number database URL" in Settings -> Geolocation.`
    expect(res.json).toEqual({ error: `geolocation download failed. ${country} ${asn}` })

    const status = (await panel.request('/api/geoip/status', { cookie })).json
    expect(status).toMatchObject({ country: { loaded: false }, asn: { loaded: false }, last_refresh_status: 'failed' })
    expect(status.last_refresh_errors).toEqual({ country, asn })

    const geoLog = panel
      .output()
      .split('\n')
      .filter((l) => /geolocation/i.test(l))
    expect(geoLog.length).toBeGreaterThan(0)
    const everything = JSON.stringify([res.json, status, geoLog])
    expect(everything).not.toMatch(/previous file|kept|stays in use|fetch failed/)
    expect(everything).not.toContain('geo-licence-secret')
  })
})
