import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { panelEnvFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { serveDemoGeo, type DemoGeoServer } from '../support/demo'
import { edgeBinaries } from '../support/edge-bins'
import { httpRequest } from '../support/http'
import { registerTestSecret } from '../support/panel'
import { unusedPort } from '../support/ports'
import { startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { axeProblemsInBothThemesAndWidths, DESK, firstPage, launchChromium, screenshot, signInAsAdmin } from './browser'

// Issue 35 item 6 in a real Chromium, against the built panel, the production Caddy and the real
// CrowdSec engine: a geolocation download that fails names its URL and links to the setting that
// fixes it (and, once fixed there, the download works); the Caddyfile import's dry run says which
// TLS each host gets and why Import is disabled; the result links to the created host.

let cs: CrowdsecHandle
let stack: ProxyStack
let up: TestUpstream
let geo: DemoGeoServer
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let deadUrl: string
const consoleErrors: string[] = []

beforeAll(async () => {
  cs = await startCrowdsec()
  registerTestSecret(cs.machinePassword, cs.bouncerKey)
  up = await startTestUpstream()
  geo = await serveDemoGeo()
  // A port that was free a moment ago: nothing listens there.
  deadUrl = `http://127.0.0.1:${await unusedPort()}/country.mmdb`
  stack = await startProxyStack({
    env: {
      ...panelEnvFor(cs),
      PANEL_DOMAIN: '127.0.0.1',
      PANEL_PUBLIC_URL: '',
      PANEL_CADDY_BIN: edgeBinaries().caddy,
      GEOIP_COUNTRY_URL: deadUrl,
      GEOIP_ASN_URL: geo.asnUrl,
    },
  })
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  await page.setViewportSize(DESK)
  await signInAsAdmin(page, stack.panel.url)
}, 180_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await geo?.stop()
  await up?.stop()
  await cs?.stop()
})

const expectVisible = (l: Locator) => l.waitFor({ state: 'visible' })

describe('geolocation download failures', () => {
  it('"Download now" with a URL where nothing listens shows the URL and links to the setting, which fixes it', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Security' }).click()
    await page.getByRole('heading', { name: 'Geolocation databases' }).waitFor()
    await page.getByRole('button', { name: 'Download now' }).click()
    const result = page.getByRole('list', { name: 'Download result per database' })
    await result.waitFor()
    const [country, asn] = await result.getByRole('listitem').allTextContents()
    // Never downloaded before: no "previous file" claim.
    expect(country).toBe(
      `Country database: the download from ${deadUrl} failed (connection refused: nothing listens there). Check "Country database URL" in Settings -> Geolocation. Change the URL in Settings → Geolocation`,
    )
    expect(asn).toMatch(/^AS number: downloaded, version .+, \d+ day\(s\) old$/)
    await expectVisible(page.getByRole('alert').filter({ hasText: 'Not every database could be downloaded.' }))
    consoleErrors.splice(0).forEach((e) => expect(e).toMatch(/status of 502/)) // the refusal is the scenario
    expect(await axeProblemsInBothThemesAndWidths(page, 'security, a failed geolocation download')).toEqual([])
    await screenshot(page, 'demo-geo-download-failed')

    // The link lands on the field, focused, holding the URL that failed.
    await result.getByRole('link', { name: 'Change the URL in Settings → Geolocation' }).click()
    await page.waitForURL((u) => u.pathname === '/settings' && u.hash === '#setting-geoip-country_url')
    const field = page.getByLabel('Country database URL')
    await expect.poll(() => field.evaluate((el) => el === document.activeElement)).toBe(true)
    expect(await field.inputValue()).toBe(deadUrl)
    await field.fill(geo.countryUrl)
    await page.getByRole('button', { name: 'Save settings' }).click()
    await expectVisible(page.getByRole('status').filter({ hasText: 'Settings saved.' }))

    await page.getByRole('navigation').getByRole('link', { name: 'Security' }).click()
    await page.getByRole('button', { name: 'Download now' }).click()
    await expectVisible(page.getByRole('listitem').filter({ hasText: /^Country: downloaded, version / }))
    expect(await result.getByRole('link').count()).toBe(0)
    expect(consoleErrors).toEqual([])
  })
})

describe('Caddyfile import', () => {
  it('says why Import is disabled, lists the TLS each host gets with a public-CA warning, and links to the created host', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Import' }).click()
    const importButton = page.getByRole('button', { name: 'Import', exact: true })
    expect(await importButton.isDisabled()).toBe(true)
    const hint = page.locator('#import-hint')
    expect(await hint.textContent()).toBe('Paste a Caddyfile, then run a dry run first: Import applies what the dry run shows.')
    expect(await importButton.getAttribute('aria-describedby')).toBe('import-hint')

    const caddyfile = (withTls: boolean) =>
      `http://plain.example.test {\n\treverse_proxy 127.0.0.1:${up.port}\n}\n${withTls ? `blog.example.test {\n\treverse_proxy 127.0.0.1:${up.port}\n}\n` : ''}`
    await page.getByLabel('Caddyfile text').fill(caddyfile(true))
    expect(await hint.textContent()).toBe('Run a dry run first: Import applies what the dry run shows.')
    await page.getByRole('button', { name: 'Dry run' }).click()
    await expectVisible(page.getByRole('status').filter({ hasText: 'Dry run: 4 object(s) would be created. Nothing was changed.' }))
    expect(await hint.count()).toBe(0)
    expect(await importButton.isDisabled()).toBe(false)
    await expectVisible(page.getByRole('row', { name: /^host plain\.example\.test Caddyfile line 1 None \(plain HTTP\) will be created$/ }))
    await expectVisible(
      page.getByRole('row', {
        name: /^host blog\.example\.test Caddyfile line 4 Automatic \(ACME\), HTTP-01 challenge, from Let's Encrypt \(the proxy's default CA\) public CA will be created$/,
      }),
    )
    await expectVisible(page.getByRole('heading', { name: 'Certificates from a public CA (1)' }))
    await expectVisible(
      page.getByText(
        'blog.example.test: importing starts a certificate order at a public CA at once: blog.example.test must point at this proxy from the Internet, or the order fails.',
      ),
    )
    expect(await axeProblemsInBothThemesAndWidths(page, 'import, a dry run')).toEqual([])
    await screenshot(page, 'demo-import-dry-run')

    // Only the plain host is imported here: the other would ask a public CA.
    await page.getByLabel('Caddyfile text').fill(caddyfile(false))
    expect(await importButton.isDisabled()).toBe(true)
    await page.getByRole('button', { name: 'Dry run' }).click()
    await expectVisible(page.getByRole('status').filter({ hasText: 'Dry run: 2 object(s) would be created.' }))
    await importButton.click()
    await expectVisible(page.getByRole('status').filter({ hasText: 'Imported: 2 object(s) created.' }))
    expect(await hint.textContent()).toBe('Imported. Change the source and run a dry run to import more.')
    expect((await httpRequest({ port: stack.httpPort, host: 'plain.example.test', path: '/' })).status).toBe(200)
    await page.getByRole('link', { name: 'plain.example.test' }).click()
    await page.getByRole('heading', { name: 'plain.example.test' }).waitFor()
    expect(new URL(page.url()).pathname).toMatch(/^\/hosts\/\d+$/)
    expect(consoleErrors).toEqual([])
  })
})
