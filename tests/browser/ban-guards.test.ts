import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { decisionsFor, panelEnvFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { eventually, httpRequest } from '../support/http'
import { registerTestSecret } from '../support/panel'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { writeMmdb } from '../support/mmdb-writer'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, screenshot, signInAsAdmin } from './browser'

// The Security screen's guard rails and messages (issue 35, item 4) in a real Chromium,
// against the built panel, the production Caddy and the real CrowdSec engine. The browser
// reaches the panel from 127.0.0.1: its own address, a loopback one, and the address the
// proxy sees for requests from this machine.

const DOMAIN = 'app.example.test'
const OWN = '127.0.0.1'

let cs: CrowdsecHandle
let stack: ProxyStack
let upstream: TestUpstream
let source: Server
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const consoleErrors: string[] = []

const through = () => httpRequest({ port: stack.httpPort, host: DOMAIN, path: '/' })
const expectVisible = (l: Locator, timeout?: number) => l.waitFor({ state: 'visible', timeout })
const expectHidden = (l: Locator, timeout?: number) => l.waitFor({ state: 'hidden', timeout })

beforeAll(async () => {
  cs = await startCrowdsec()
  registerTestSecret(cs.machinePassword, cs.bouncerKey)
  upstream = await startTestUpstream()
  // The country database the "Download now" button fetches, on loopback. The writer dates it
  // 2023-11-14 (build_epoch 1,700,000,000): years old, as in the operator walk.
  const country = writeMmdb([
    ['5.0.0.0/24', { country_code: 'LU' }],
    ['5.0.1.0/24', { country_code: 'LU' }],
    ['81.2.69.0/24', { country_code: 'GB' }],
  ])
  source = createServer((req, res) => {
    if (req.url === '/country.mmdb') res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(country)
    else res.writeHead(404).end('not here')
  })
  await new Promise<void>((resolve) => source.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(source.address() as AddressInfo).port}`
  stack = await startProxyStack({ env: { ...panelEnvFor(cs), PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  const put = await stack.panel.request('/api/settings', {
    method: 'PUT',
    cookie: stack.admin,
    body: { 'geoip.country_url': `${url}/country.mmdb`, 'geoip.asn_url': `${url}/asn.mmdb`, 'security_engine.ticker_interval': '1s' },
  })
  expect(put.status, put.text).toBe(200)
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${upstream.port}` }] })
  const host = await createHost(stack, { domain: DOMAIN, target_group_id: group.id })
  expect(host.status, host.text).toBe(201)
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  page.on('dialog', (d) => d.accept())
  await signInAsAdmin(page, stack.panel.url)
}, 120_000)

afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await upstream?.stop()
  if (source) {
    source.closeAllConnections()
    await new Promise<void>((resolve) => source.close(() => resolve()))
  }
  await cs?.stop()
})

const banCard = () => page.locator('#ban')
const banMessages = () => banCard().locator('.notice').allTextContents()
const banner = () => page.getByRole('alert').filter({ hasText: `Your own address ${OWN} is banned` })

describe('guard rails on bans in the Security screen', () => {
  it('banning 127.0.0.1 warns first (own address, loopback) and bans nothing; axe finds no problem with the warning open', async () => {
    expect((await eventually(through, (r) => r.status === 200)).status).toBe(200)
    await page.goto(`${stack.panel.url}/security`)
    await page.getByRole('heading', { name: 'Ban or unban' }).waitFor()
    await banCard().getByLabel('Address or range to ban').fill(OWN)
    await banCard().getByLabel('Ban reason').fill('testing the guard')
    await page.getByRole('button', { name: 'Ban', exact: true }).click()
    const warning = page.getByTestId('ban-guard')
    await expectVisible(warning)
    const reasons = await warning.getByRole('listitem').allTextContents()
    expect(reasons).toEqual([
      `${OWN} is your own address: banning it locks you out of the hosts behind the proxy`,
      `${OWN} is inside the LAN/loopback range 127.0.0.0/8: the panel, the proxy and your own network use these addresses`,
    ])
    expect(await warning.textContent()).not.toContain('confirm: true') // the API's hint for scripts is not the UI's
    expect(await decisionsFor(cs, OWN)).toEqual([])
    expect(await banner().count()).toBe(0)
    expect(await axeProblemsInBothThemesAndWidths(page, 'Security, ban warning open')).toEqual([])
    await screenshot(page, 'security-ban-warning')
  })

  it('"Ban anyway" bans it: the banner appears without a reload, the reason is listed, the proxy refuses this machine', async () => {
    const navigations: string[] = []
    page.on('framenavigated', (f) => navigations.push(f.url()))
    await page.getByTestId('ban-guard').getByRole('button', { name: 'Ban anyway' }).click()
    await expectVisible(banner())
    await expectHidden(page.getByTestId('ban-guard'))
    expect(navigations).toEqual([])
    expect((await decisionsFor(cs, OWN)).map((d) => d.origin)).toEqual(['panel'])
    expect(await banMessages()).toEqual([`${OWN} banned for 4h; the proxy applies it at its next poll of the engine.`])
    const row = page.locator('#decisions tbody tr').filter({ has: page.getByRole('cell', { name: OWN, exact: true }) })
    await expectVisible(row)
    expect(await row.getByRole('cell').nth(1).textContent()).toBe('IP address')
    expect(await row.getByRole('cell').nth(4).textContent()).toBe('testing the guard')
    expect((await eventually(through, (r) => r.status === 403, 20_000)).status).toBe(403)
  })

  it('"Unban my address" lifts it: the banner goes without a reload and the older message with it', async () => {
    await banner().getByRole('button', { name: 'Unban my address' }).click()
    await expectHidden(banner())
    await expectVisible(page.getByText(`Your address ${OWN} is not banned`))
    expect(await decisionsFor(cs, OWN)).toEqual([])
    expect(await banMessages()).toEqual([`${OWN}: 1 decision(s) removed.`])
    expect((await eventually(through, (r) => r.status === 200, 20_000)).status).toBe(200)
  })

  it('"Do not ban" on a LAN address bans nothing; a public address bans without a question', async () => {
    await banCard().getByLabel('Address or range to ban').fill('192.168.1.20')
    await page.getByRole('button', { name: 'Ban', exact: true }).click()
    await expectVisible(page.getByTestId('ban-guard'))
    await page.getByRole('button', { name: 'Do not ban' }).click()
    await expectHidden(page.getByTestId('ban-guard'))
    expect(await banMessages()).toEqual(['Nothing was banned.'])
    expect(await decisionsFor(cs, '192.168.1.20')).toEqual([])

    await banCard().getByLabel('Address or range to ban').fill('198.51.100.0/24')
    await banCard().getByLabel('Ban reason').fill('abuse report 17')
    await page.getByRole('button', { name: 'Ban', exact: true }).click()
    await expectVisible(banCard().getByText('198.51.100.0/24 banned for 4h'))
    expect(await page.getByTestId('ban-guard').count()).toBe(0)
    expect(await banMessages()).toHaveLength(1)
    const row = page.locator('#decisions tbody tr').filter({ has: page.getByRole('cell', { name: '198.51.100.0/24', exact: true }) })
    await expectVisible(row)
    expect(await row.getByRole('cell').nth(1).textContent()).toBe('Range')
    expect(await row.getByRole('cell').nth(4).textContent()).toBe('abuse report 17')
  })
})

describe('country bans in words', () => {
  it('without the database the error points at the button above; the downloaded one is dated and called out of date', async () => {
    await page.getByLabel('Country', { exact: true }).fill('Luxembourg')
    await page.getByLabel('Ban duration').fill('1h')
    await page.getByRole('button', { name: 'Ban country' }).click()
    const countries = page.locator('#countries')
    await expectVisible(
      countries.getByText('The country database is not loaded: download it first (Download now, above), then ban the country.'),
    )
    expect(await countries.textContent()).not.toContain('POST /api/geoip/refresh')

    await page.getByRole('button', { name: 'Download now' }).click()
    await page.getByRole('list', { name: 'Download result per database' }).waitFor()
    const geoRow = countries
      .getByRole('table')
      .first()
      .getByRole('row')
      .filter({ has: page.getByRole('cell', { name: 'Country', exact: true }) })
    expect(await geoRow.getByRole('cell').nth(1).textContent()).toBe('loaded, older than 30 days')
    await expectVisible(countries.getByText(/The country database is \d+ days old/))

    await page.getByRole('button', { name: 'Ban country' }).click()
    await expectVisible(countries.getByText('Ban of Luxembourg (LU) started: its address ranges are being sent to the engine.'))
    const revoke = page.getByRole('button', { name: 'Revoke ban of LU' })
    await expectVisible(revoke, 30_000)
    // The "started" message is gone once the job has ended; the job's line says how.
    await expectHidden(countries.getByText('Ban of Luxembourg (LU) started'))
    const banned = countries.getByRole('row').filter({ has: revoke })
    const dbCell = (await banned.getByRole('cell').nth(3).textContent()) ?? ''
    expect(dbCell).toContain('2023-11-14 22:13:20 UTC') // the database's build time, not raw ISO
    expect(dbCell).toContain('older than 30 days: download a newer database and ban again')
    expect((await decisionsFor(cs, '5.0.1.7')).map((d) => d.origin)).toEqual(['panel-country-LU'])
  })

  it('the counts above and below the list count the same decisions', async () => {
    await page.getByRole('button', { name: 'Refresh decisions' }).click()
    const all = page.getByRole('group', { name: 'Decisions by origin' }).getByRole('button', { name: /^All but country-ban ranges: / })
    await expect.poll(() => all.textContent()).toBe('All but country-ban ranges: 1')
    const ranges = (await stack.panel.request('/api/security/countries', { cookie: stack.admin })).json[0].cidr_count
    expect(ranges).toBeGreaterThan(0)
    await expect
      .poll(() => page.getByTestId('decisions-freshness').textContent())
      .toMatch(new RegExp(`^\\s*1 active decision\\(s\\) listed, besides the ${ranges} country-ban range\\(s\\) summed up above, as of `))
    expect(await axeProblemsInBothThemesAndWidths(page, 'Security after a country ban')).toEqual([])
  })
})
