import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { eventually, httpRequest } from '../support/http'
import { ADMIN } from '../support/panel'
import { freePort } from '../support/ports'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium } from './browser'

// Pages of our own (docs/hosts.md, "Pages") on the host page and in Settings, in a real
// Chromium against the built panel and the production proxy: each choice made on screen is
// checked by a request through the proxy to a host whose upstream is down (502).

const HOST = 'down.example.test'

let stack: ProxyStack
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let hostId: number
const consoleErrors: string[] = []

beforeAll(async () => {
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  const dead = await createGroup(stack, { name: 'dead', targets: [{ address: `127.0.0.1:${await freePort()}` }] })
  const res = await createHost(stack, { domain: HOST, target_group_id: dead.id })
  expect(res.status, res.text).toBe(201)
  hostId = res.json.id
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  await page.goto(`${stack.panel.url}/login`)
  await page.getByLabel('Email').fill(ADMIN.email)
  await page.getByLabel('Password').fill(ADMIN.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL((u) => !u.pathname.startsWith('/login'))
}, 120_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
})

/** What a browser gets from the host through the proxy: the page, or the bare 502 (empty body). */
const throughProxy = async () => (await httpRequest({ port: stack.httpPort, host: HOST, path: '/', headers: { accept: 'text/html' } })).body
// A request while the proxy reloads may fail: eventually() hands the error to the check, which asks again.
const showsPage = (want: boolean) =>
  eventually(throughProxy, (body) => typeof body === 'string' && body.includes('The site is not answering') === want, 15_000, 200)

describe('pages in the web UI', () => {
  it('a new panel answers pages; the host page says it follows the global setting and previews the page', async () => {
    const body = await showsPage(true)
    expect(body).toContain(HOST)
    await page.goto(`${stack.panel.url}/hosts/${hostId}`)
    const select = page.getByLabel('Refusal and error pages')
    await select.getByRole('option', { name: 'Follow the global setting (on)' }).waitFor({ state: 'attached' })
    expect(await select.inputValue()).toBe('inherit')
    const preview = page.getByTestId('pages-preview')
    await preview.waitFor({ state: 'visible' })
    await expect(preview.textContent()).resolves.toContain(HOST)
    expect(await axeProblemsInBothThemesAndWidths(page, 'host page, pages follow the global setting')).toEqual([])
  })

  it("the host's message shows in the preview and on the proxy's page, as text", async () => {
    const note = 'Call the desk <b>now</b> {http.request.uuid}'
    await page.getByLabel('Message on the pages (optional)').fill(note)
    await expect(page.getByTestId('pages-preview-message').textContent()).resolves.toBe(note)
    await page.getByRole('button', { name: 'Save host' }).click()
    await page.getByText('Host saved and applied to the proxy.').waitFor({ state: 'visible' })
    expect((await stack.panel.request(`/api/hosts/${hostId}`, { cookie: stack.admin })).json.error_page_message).toBe(note)
    const body = await eventually(throughProxy, (b) => b.includes('Call the desk'), 15_000, 200)
    expect(body).toContain('Call the desk &#60;b&#62;now&#60;/b&#62; {http.request.uuid}')
    expect(await axeProblemsInBothThemesAndWidths(page, 'host page, pages with a message')).toEqual([])
  })

  it('turning pages off for the host gives the bare answer again, and the preview goes', async () => {
    await page.getByLabel('Refusal and error pages').selectOption('off')
    await page.getByTestId('pages-preview').waitFor({ state: 'detached' })
    await page.getByRole('button', { name: 'Save host' }).click()
    await page.getByText('Host saved and applied to the proxy.').waitFor({ state: 'visible' })
    expect((await stack.panel.request(`/api/hosts/${hostId}`, { cookie: stack.admin })).json.error_pages).toBe('off')
    expect(await showsPage(false)).toBe('')
    await expect(page.getByTestId('pages-help').textContent()).resolves.toMatch(/bare status/)
    expect(await axeProblemsInBothThemesAndWidths(page, 'host page, pages off')).toEqual([])
  })

  it('the global setting in Settings: a host set to follow it follows it', async () => {
    await page.getByLabel('Refusal and error pages').selectOption('inherit')
    await page.getByRole('button', { name: 'Save host' }).click()
    await page.getByText('Host saved and applied to the proxy.').waitFor({ state: 'visible' })
    await showsPage(true)
    await page.goto(`${stack.panel.url}/settings`)
    const toggle = page.getByLabel('Refusal and error pages with a request id')
    expect(await toggle.isChecked()).toBe(true)
    await toggle.uncheck()
    await page.getByRole('button', { name: 'Save settings' }).click()
    expect(await showsPage(false)).toBe('')
    expect(await axeProblemsInBothThemesAndWidths(page, 'settings, pages off')).toEqual([])
    await page.goto(`${stack.panel.url}/hosts/${hostId}`)
    await page
      .getByLabel('Refusal and error pages')
      .getByRole('option', { name: 'Follow the global setting (off)' })
      .waitFor({ state: 'attached' })
    expect(consoleErrors).toEqual([])
  })
})
