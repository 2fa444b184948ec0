import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { eventually, httpRequest } from '../support/http'
import { ADMIN } from '../support/panel'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium } from './browser'

// Compression (and, later, header rules) on the host page and in Settings, in a real
// Chromium against the built panel, the production proxy and a real upstream: every
// choice made on screen is checked by a request through the proxy.

const HOST = 'app.example.test'

let stack: ProxyStack
let up: TestUpstream
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let hostId: number
const consoleErrors: string[] = []

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const res = await createHost(stack, { domain: HOST, target_group_id: group.id })
  expect(res.status, res.text).toBe(201)
  hostId = res.json.id
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  page.on('dialog', (d) => d.accept())
  await page.goto(`${stack.panel.url}/login`)
  await page.getByLabel('Email').fill(ADMIN.email)
  await page.getByLabel('Password').fill(ADMIN.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL((u) => !u.pathname.startsWith('/login'))
}, 120_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await up?.stop()
})

// The test upstream echoes the URL: a long query makes its JSON answer larger than the minimum size.
const encodingThroughProxy = async () =>
  (await httpRequest({ port: stack.httpPort, host: HOST, path: `/?pad=${'a'.repeat(2000)}`, headers: { 'accept-encoding': 'zstd, gzip' } }))
    .headers['content-encoding']
const encodingBecomes = (want: string | undefined) => eventually(encodingThroughProxy, (v) => v === want, 15_000, 200)

describe('compression in the web UI', () => {
  it('a new panel compresses; turning the global setting off in Settings stops it and suggests turning it back on', async () => {
    expect(await encodingThroughProxy()).toBe('zstd')
    await page.goto(`${stack.panel.url}/settings`)
    const toggle = page.getByLabel('Compress answers (zstd or gzip)')
    expect(await toggle.isChecked()).toBe(true)
    await expect(page.getByTestId('compression-suggestion').count()).resolves.toBe(0)
    await toggle.uncheck()
    await page.getByRole('button', { name: 'Save settings' }).click()
    await page.getByTestId('compression-suggestion').waitFor({ state: 'visible' })
    expect(await encodingBecomes(undefined)).toBeUndefined()
    expect(await axeProblemsInBothThemesAndWidths(page, 'settings, compression off')).toEqual([])
  })

  it("the host page shows the global state, and turning compression on for the host compresses that host's answers", async () => {
    await page.goto(`${stack.panel.url}/hosts/${hostId}`)
    const select = page.getByLabel('Compress answers (zstd or gzip)')
    await page.getByRole('option', { name: 'Follow the global setting (off)' }).waitFor({ state: 'attached' })
    expect(await select.inputValue()).toBe('inherit')
    await page.getByTestId('compression-suggestion').waitFor({ state: 'visible' })
    expect(await axeProblemsInBothThemesAndWidths(page, 'host page, compression follows the global setting')).toEqual([])
    await select.selectOption('on')
    await page.getByRole('button', { name: 'Save host' }).click()
    await page.getByText('Host saved and applied to the proxy.').waitFor({ state: 'visible' })
    expect((await stack.panel.request(`/api/hosts/${hostId}`, { cookie: stack.admin })).json.compression).toBe('on')
    expect(await encodingBecomes('zstd')).toBe('zstd')
    await expect(page.getByTestId('compression-help').textContent()).resolves.toMatch(/sent compressed/)
  })

  it('turning the host off wins over the global setting', async () => {
    expect(
      (await stack.panel.request('/api/settings', { method: 'PUT', cookie: stack.admin, body: { 'proxy.compression': true } })).status,
    ).toBe(200)
    await page.goto(`${stack.panel.url}/hosts/${hostId}`)
    const select = page.getByLabel('Compress answers (zstd or gzip)')
    await page.getByRole('option', { name: 'Follow the global setting (on)' }).waitFor({ state: 'attached' })
    await select.selectOption('off')
    await page.getByRole('button', { name: 'Save host' }).click()
    expect(await encodingBecomes(undefined)).toBeUndefined()
    expect(consoleErrors).toEqual([])
  })
})
