import { describe, expect, it } from 'vitest'
import { startPanel } from '../support/panel'

// The built panel refuses a configuration it cannot run safely at start, naming the variable
// and the fix (server/utils/core/config.ts), rather than failing later in a browser.

describe('configuration refused at start', () => {
  // Regression (issue 33, item 10; review Info "cookie domain on a public suffix"): with
  // PANEL_DOMAIN=myhome.duckdns.org the cookie Domain became duckdns.org, which browsers refuse
  // (login broke with no explanation), and every *.duckdns.org counted as the panel's own site.
  it('PANEL_DOMAIN whose cookie domain is a public suffix: the panel exits with the fix', async () => {
    const start = startPanel({ env: { PANEL_DOMAIN: 'myhome.duckdns.org' } })
    await expect(start).rejects.toThrow(
      /panel exited with 1[\s\S]*PANEL_DOMAIN "myhome\.duckdns\.org" would put the session cookie on "duckdns\.org", a public suffix[\s\S]*panel\.myhome\.duckdns\.org/,
    )
  })

  it('one level down, inside the name the operator holds, it starts', async () => {
    const panel = await startPanel({ env: { PANEL_DOMAIN: 'panel.myhome.duckdns.org' } })
    try {
      expect((await panel.request('/api/setup')).status).toBe(200)
    } finally {
      await panel.stop()
    }
  })
})
