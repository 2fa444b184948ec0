import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { panelEnvFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { ADMIN } from '../support/panel'
import { unusedPort } from '../support/ports'
import { makeTempDir } from '../support/processes'
import { writeMmdb } from '../support/mmdb-writer'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { axeProblemsInBothThemesAndWidths, DESK, firstPage, launchChromium, PHONE } from './browser'

// Health that follows reality (issue 35, item 1) in Chromium, against the built panel,
// the production Caddy and the real CrowdSec engine: a target taken down shows on the
// dashboard, its group and its host within its health interval (1 s here), and healthy
// again once it answers; a country database 1,109 days old and an ACME order to a CA
// where nothing listens are problems on the dashboard; each problem's link lands on the
// section that fixes it.

let stack: ProxyStack
let cs: CrowdsecHandle
let upstream: TestUpstream
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let groupId: number
let hostId: number
const consoleErrors: string[] = []
const DAY_S = 86_400

beforeAll(async () => {
  const dataDir = makeTempDir('panel-health-')
  mkdirSync(join(dataDir, 'geoip'))
  const built = Math.floor(Date.now() / 1000) - 1_109 * DAY_S
  writeFileSync(
    join(dataDir, 'geoip/country.mmdb'),
    writeMmdb([['5.0.0.0/24', { country_code: 'LU' }]], 'Test-Country', { buildEpoch: built }),
  )
  upstream = await startTestUpstream()
  cs = await startCrowdsec({ agent: false })
  stack = await startProxyStack({ dataDir, env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '', ...panelEnvFor(cs) } })
  const group = await createGroup(stack, {
    name: 'shop-backend',
    targets: [{ address: `127.0.0.1:${upstream.port}` }],
    health_check: { path: '/health', interval_seconds: 1, expect_status: 200 },
  })
  groupId = group.id
  const host = await createHost(stack, { domain: 'shop.example.test', target_group_id: groupId })
  expect(host.status).toBe(201)
  hostId = host.json.id
  const acme = await createHost(stack, {
    domain: 'nocert.example.test',
    target_group_id: groupId,
    tls_mode: 'auto',
    tls_challenge: 'http',
    tls_acme_ca_url: `https://127.0.0.1:${await unusedPort()}/dir`, // nothing listens there
    tls_email: 'ops@example.test',
  })
  expect(acme.status).toBe(201)
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  await page.goto(`${stack.panel.url}/login`)
  await page.getByLabel('Email').fill(ADMIN.email)
  await page.getByLabel('Password').fill(ADMIN.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor()
}, 120_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await cs?.stop()
  await upstream?.stop()
  expect(consoleErrors).toEqual([])
})

const problems = () => page.getByTestId('problems')
/** The dashboard polls every 30 s: each look reloads it (the server's answer is what is checked). */
const dashboardText = async () => {
  await page.goto(`${stack.panel.url}/`)
  await page.getByRole('heading', { name: /^(Problems \(\d+\)|No problems)$/ }).waitFor()
  return ((await problems().count()) ? await problems().textContent() : '')!.replace(/\s+/g, ' ')
}
const groupRow = () => page.locator(`#group-${groupId}`)
/** Whether the element's top edge is inside the window. */
const inViewport = (selector: string) =>
  page.locator(selector).evaluate((el) => {
    const r = el.getBoundingClientRect()
    return r.top >= 0 && r.top < window.innerHeight
  })

describe('health that follows reality', () => {
  it('a stale country database and a failed ACME order are problems on the dashboard, with dates in words', async () => {
    await expect.poll(dashboardText, { timeout: 30_000 }).toMatch(/certificate of nocert\.example\.test: order failed: /)
    const text = await dashboardText()
    expect(text).toContain('Warning country database: 1109 days old (more than 30)')
    expect(text).toContain('· Download the databases')
    // The version is a date, not raw ISO.
    const geo = page.locator('ul.health li', { hasText: 'Geolocation' }).first()
    expect((await geo.textContent())!.replace(/\s+/g, ' ').trim()).toMatch(
      /^Warning Geolocation country database built \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/,
    )
    expect(await axeProblemsInBothThemesAndWidths(page, 'dashboard with problems')).toEqual([])
  })

  it('a target taken down shows on the dashboard, its group, the host list and the host page, with the cause', async () => {
    await page.goto(`${stack.panel.url}/target-groups`)
    await groupRow().getByText('Healthy', { exact: true }).waitFor()
    await upstream.setDown(true)
    // The screen re-reads every 5 s; the proxy checks every second.
    await groupRow().getByText('Unhealthy', { exact: true }).waitFor({ timeout: 15_000 })
    expect(await groupRow().textContent()).toContain('connect: connection refused (since ')
    expect(await axeProblemsInBothThemesAndWidths(page, 'target groups with an unhealthy target')).toEqual([])

    await expect
      .poll(dashboardText, { timeout: 15_000 })
      .toContain(`Problem target 127.0.0.1:${upstream.port} of group shop-backend: connect: connection refused (since `)
    expect((await page.locator('ul.health li', { hasText: 'Targets' }).first().textContent())!.replace(/\s+/g, ' ').trim()).toBe(
      'Problem Targets 1 target(s) unhealthy',
    )

    await page.goto(`${stack.panel.url}/hosts`)
    const hostRow = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'shop.example.test' }) })
    await hostRow.getByText('all targets down').waitFor()

    await page.goto(`${stack.panel.url}/hosts/${hostId}`)
    const health = page.getByTestId('target-health')
    await health.getByText('Unhealthy', { exact: true }).waitFor()
    expect((await health.textContent())!.replace(/\s+/g, ' ')).toContain(
      `127.0.0.1:${upstream.port} Unhealthy connect: connection refused (since `,
    )
    expect(await axeProblemsInBothThemesAndWidths(page, 'host page with an unhealthy target')).toEqual([])
    // Its link goes to the group's row.
    await health.getByRole('link', { name: 'Target group shop-backend' }).click()
    await page.waitForURL(`${stack.panel.url}/target-groups#group-${groupId}`)
    await groupRow().getByText('Unhealthy', { exact: true }).waitFor()
  })

  it("each problem's link lands on its section, also when the section renders after the screen", async () => {
    await page.setViewportSize(PHONE)
    try {
      for (const [link, url, section] of [
        ['Download the databases', '/security#countries', '#countries'],
        ['Failed ACME attempts', '/certificates#fail-h', '#fail-h'],
      ] as const) {
        await dashboardText()
        await problems().getByRole('link', { name: link }).click()
        await page.waitForURL(`${stack.panel.url}${url}`)
        await page.locator(section).waitFor()
        await expect.poll(() => inViewport(section)).toBe(true)
      }
      // Where the dashboard sent the operator, the 1,109-day-old database is flagged too.
      await page.goto(`${stack.panel.url}/security#countries`)
      const geoTable = page.locator('section').filter({ has: page.getByRole('heading', { name: 'Geolocation databases' }) })
      await geoTable.getByText('loaded, older than 30 days').waitFor()
    } finally {
      await page.setViewportSize(DESK)
    }
  })

  it('a target that answers again is healthy again on the group, the host and the dashboard', async () => {
    await upstream.setDown(false)
    await page.goto(`${stack.panel.url}/target-groups`)
    await groupRow().getByText('Healthy', { exact: true }).waitFor({ timeout: 15_000 })
    await expect.poll(dashboardText, { timeout: 15_000 }).not.toContain('of group shop-backend')
    await page.goto(`${stack.panel.url}/hosts`)
    await page
      .getByRole('row')
      .filter({ has: page.getByRole('link', { name: 'shop.example.test' }) })
      .getByText('targets healthy')
      .waitFor()
  })
})
