import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { panelEnvFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { ADMIN } from '../support/panel'
import { startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { axeProblemsInBothThemesAndWidths, DESK, firstPage, launchChromium, PHONE } from './browser'

// The dashboard's suggestions in Chromium, against the built panel, the production
// Caddy and the real CrowdSec engine: compression off is suggested below Component
// health (never as a problem), with a link that lands on the switch in Settings.

let stack: ProxyStack
let cs: CrowdsecHandle
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const consoleErrors: string[] = []

beforeAll(async () => {
  cs = await startCrowdsec({ agent: false })
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '', ...panelEnvFor(cs) } })
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
  expect(consoleErrors).toEqual([])
})

const setCompression = async (on: boolean) =>
  expect(
    (await stack.panel.request('/api/settings', { method: 'PUT', cookie: stack.admin, body: { 'proxy.compression': on } })).status,
  ).toBe(200)
/** The dashboard, once its health has loaded. */
const dashboard = async () => {
  await page.goto(`${stack.panel.url}/`)
  await page.getByRole('heading', { name: /^(Problems \(\d+\)|No problems)$/ }).waitFor()
}
const suggestions = () => page.getByTestId('suggestions')

describe('suggestions on the dashboard', () => {
  it('compression on (a new panel): no suggestions section', async () => {
    await dashboard()
    expect(await suggestions().count()).toBe(0)
    expect(await page.getByRole('heading', { name: 'Suggestions' }).count()).toBe(0)
  })

  it('compression off: "Suggestions" below Component health with the link, not a problem; axe clean in both themes and widths', async () => {
    await setCompression(false)
    await dashboard()
    await page.getByRole('heading', { name: 'Suggestions' }).waitFor()
    expect((await suggestions().textContent())!.replace(/\s+/g, ' ')).toContain('Compression is off: turning it on makes pages')
    // Below the health card, in the page's order.
    const order = await page
      .locator('section h2')
      .evaluateAll((hs) => hs.map((h) => h.textContent?.trim()).filter((t) => t === 'Component health' || t === 'Suggestions'))
    expect(order).toEqual(['Component health', 'Suggestions'])
    const problemsList = page.getByTestId('problems')
    if (await problemsList.count()) expect(await problemsList.textContent()).not.toMatch(/compress/i)
    expect(await axeProblemsInBothThemesAndWidths(page, 'dashboard with a suggestion')).toEqual([])
  })

  it('the link lands on the compression switch in Settings', async () => {
    await page.setViewportSize(PHONE)
    try {
      await dashboard()
      await suggestions().getByRole('link', { name: 'Compression in Settings' }).click()
      await page.waitForURL(`${stack.panel.url}/settings#setting-proxy-compression`)
      const field = page.locator('#setting-proxy-compression')
      await field.waitFor()
      expect(await field.isChecked()).toBe(false)
      await expect
        .poll(() =>
          field.evaluate((el) => {
            const r = el.getBoundingClientRect()
            return r.top >= 0 && r.top < window.innerHeight
          }),
        )
        .toBe(true)
    } finally {
      await page.setViewportSize(DESK)
    }
  })

  it('compression on again: the suggestion is gone', async () => {
    await setCompression(true)
    await dashboard()
    expect(await suggestions().count()).toBe(0)
  })
})
