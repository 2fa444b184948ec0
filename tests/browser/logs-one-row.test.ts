import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { eventually, httpRequest } from '../support/http'
import { ADMIN } from '../support/panel'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, screenshot, signInAsAdmin } from './browser'

// The Logs screen tells the operator the truth (issue 35, item 5), against the built panel,
// the production Caddy with Coraza and its real logs: a blocked request is one row with the
// WAF's verdict and its details one click away; the statistics follow the live tail; sources,
// levels, actions and fields are words, not keys.

const HOST = 'one-row.example.test'
let stack: ProxyStack
let up: TestUpstream
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const consoleErrors: string[] = []

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const res = await createHost(stack, {
    domain: HOST,
    target_group_id: group.id,
    bouncer_enabled: false,
    waf_enabled: true,
    waf_mode: 'blocking',
  })
  expect(res.status, res.text).toBe(201)
  const rule = await stack.panel.request(`/api/hosts/${res.json.id}/rules`, {
    method: 'POST',
    cookie: stack.admin,
    body: { path: '/docs/*', action: 'proxy', target_group_id: group.id },
  })
  expect(rule.status, rule.text).toBe(201)
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  await signInAsAdmin(page, stack.panel.url)
}, 120_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await up?.stop()
})

const through = (path: string) => httpRequest({ port: stack.httpPort, host: HOST, path })
const table = () => page.getByRole('table', { name: 'Log rows' })
const bodyRows = () => table().locator('tbody tr')
const expectVisible = (l: Locator) => l.waitFor({ state: 'visible' })
/** Waits until the stored rows of `query` satisfy `ok`: the screen is opened once they are there. */
const stored = (query: string, ok: (rows: any[]) => boolean) =>
  eventually(async () => (await stack.panel.request(`/api/logs?${query}`, { cookie: stack.admin })).json as any[], ok, 15_000, 200)

describe('Logs: one row per request, in words', () => {
  it('a blocked request is one row with the verdict; "WAF details" one click away; axe with the row open', async () => {
    expect((await through('/one-row-blocked?q=%27%20OR%20%271%27%3D%271')).status).toBe(403)
    await stored('source=waf_audit&path=/one-row-blocked', (r) => r.length === 1 && r[0].request_log_id !== null)
    await page.goto(`${stack.panel.url}/logs?path=/one-row-blocked`)
    await expectVisible(bodyRows().first())
    expect(await bodyRows().count()).toBe(1)
    const cells = await bodyRows().first().locator('td').allTextContents()
    expect(cells[1]).toMatch(/^Access\s+WAF blocked$/)
    expect(cells[2]).toBe('403')

    await bodyRows().first().click()
    const drawer = page.getByRole('dialog')
    await expectVisible(drawer.getByRole('heading', { name: 'WAF details' }))
    const waf = drawer.getByRole('region', { name: 'WAF details' })
    await expectVisible(waf.getByText('The WAF blocked this request'))
    await expect(waf.locator('dd').first().textContent()).resolves.toMatch(/^\d{6}$/)
    await expectVisible(drawer.getByRole('region', { name: 'Proxy error' }))
    // Fields in words, with units; no keys of the API.
    await expectVisible(drawer.getByText('Client address'))
    await expect(drawer.locator('dt', { hasText: 'Duration' }).locator('+ dd').textContent()).resolves.toMatch(/^\d+(\.\d+)? ms$/)
    const terms = await drawer.locator('dt').allTextContents()
    expect(terms.filter((t) => /_/.test(t))).toEqual([])
    // The table keeps its width: the detail is a drawer over it, not a column beside it.
    expect((await table().boundingBox())!.width).toBeGreaterThan(900)
    expect(await axeProblemsInBothThemesAndWidths(page, 'Logs with a row open')).toEqual([])
    await screenshot(page, 'logs-one-row-detail')

    // The WAF's own entry, one more click: the exclusion is offered from there and from the access row alike.
    await expectVisible(drawer.getByRole('button', { name: /^Exclude rule \d+ on \/one-row-blocked$/ }))
    await drawer.getByRole('button', { name: "Open the WAF's entry" }).click()
    await expectVisible(drawer.getByRole('heading', { name: /^WAF · / }))
    await expectVisible(drawer.getByRole('button', { name: 'Open the request' }))
    await drawer.getByRole('button', { name: 'Close detail' }).click()
    await drawer.waitFor({ state: 'hidden' })
  })

  it('statistics follow the live tail; a request blocked meanwhile still lands as one row', async () => {
    await page.goto(`${stack.panel.url}/logs?path=/tail-stats`)
    const rowsStat = page.getByRole('region', { name: 'Statistics' }).locator('.stat').first()
    await expect.poll(() => rowsStat.textContent()).toBe('0')
    await page.getByRole('button', { name: 'Live tail' }).click()
    await expectVisible(page.locator('.badge[role="status"]').filter({ hasText: 'live' }))
    for (let i = 0; i < 3; i++) expect((await through(`/tail-stats/${i}`)).status).toBe(200)
    await expect.poll(() => rowsStat.textContent(), { timeout: 20_000 }).toBe('3')
    expect((await through('/tail-stats/blocked?q=%27%20OR%20%271%27%3D%271')).status).toBe(403)
    await stored('source=waf_audit&path=/tail-stats/blocked', (r) => r.length === 1 && r[0].request_log_id !== null)
    const blocked = bodyRows().filter({ hasText: '/tail-stats/blocked' })
    await expect.poll(() => blocked.count(), { timeout: 20_000 }).toBe(1)
    await expect.poll(() => blocked.first().locator('td').nth(1).textContent()).toMatch(/WAF blocked/)
    await page.getByRole('button', { name: 'Stop live tail' }).click()
  })

  it('sources, levels, audit actions and filters in words; a failed login is a warning', async () => {
    const bad = await stack.panel.request('/api/auth/login', { method: 'POST', body: { email: ADMIN.email, password: 'wrong-password-1' } })
    expect(bad.status).toBe(401)
    await page.goto(`${stack.panel.url}/logs?source=audit&level=warn`)
    const sources = page.getByRole('group', { name: 'Sources' })
    for (const w of ['Access', 'Proxy error', 'Audit', 'WAF']) await expectVisible(sources.getByLabel(w, { exact: true }))
    await expect(sources.getByLabel('Audit', { exact: true }).isChecked()).resolves.toBe(true)
    const row = bodyRows().filter({ hasText: 'Login failed' }).first()
    await expectVisible(row)
    await expect(row.locator('td').nth(2).textContent()).resolves.toBe('Warning')
    await expect(page.getByLabel('Level').inputValue()).resolves.toBe('warn')
    await expect(page.locator('main').textContent()).resolves.not.toMatch(/caddy_access|caddy_error|waf_audit|login_failed/)
    // More filters: hosts and path rules by name, no id fields.
    await expect(page.getByLabel('Host ids').count()).resolves.toBe(0)
    await expect(page.getByLabel('Rule ids').count()).resolves.toBe(0)
    // A select's name holds its choice ("Host any"): the host picker is the "Host" that is not "Host domains".
    await expect
      .poll(() =>
        page
          .getByLabel(/^Host(?! domains)/)
          .locator('option')
          .allTextContents(),
      )
      .toContain(HOST)
    await expect.poll(() => page.getByLabel('Path rule').locator('option').allTextContents()).toContain(`${HOST} /docs/*`)
    expect(await axeProblemsInBothThemesAndWidths(page, 'Logs, audit rows')).toEqual([])
    expect(consoleErrors).toEqual([])
  })
})
