import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { eventually, httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, signInAsAdmin } from './browser'

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
  await signInAsAdmin(page, stack.panel.url)
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
    await page
      .getByLabel('Compress answers (zstd or gzip)')
      .getByRole('option', { name: 'Follow the global setting (off)' })
      .waitFor({ state: 'attached' })
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
    await page
      .getByLabel('Compress answers (zstd or gzip)')
      .getByRole('option', { name: 'Follow the global setting (on)' })
      .waitFor({ state: 'attached' })
    await select.selectOption('off')
    await page.getByRole('button', { name: 'Save host' }).click()
    expect(await encodingBecomes(undefined)).toBeUndefined()
    expect(consoleErrors).toEqual([])
  })
})

describe('header rules in the web UI', () => {
  it('presets as switches and an advanced rule, saved and checked through the proxy, with axe on the open box', async () => {
    await page.goto(`${stack.panel.url}/hosts/${hostId}`)
    await page.getByLabel('Security headers').check()
    await page.getByTestId('security-headers-help').waitFor({ state: 'visible' })
    await page.getByLabel('HSTS (browsers use HTTPS only for this site)').check()
    // A plain-HTTP host: the switch says HSTS will not be sent yet.
    await page.getByTestId('hsts-plain').waitFor({ state: 'visible' })
    await page.getByLabel('Preload').check()
    await page.getByTestId('hsts-preload-checklist').waitFor({ state: 'visible' })
    await page.getByText('Advanced: header rules (0)').click()
    await page.getByRole('button', { name: 'Add a header rule' }).click()
    await page.getByLabel('Header 1 goes').selectOption('request')
    await page.getByLabel('Name').fill('X-Tenant')
    await page.getByLabel('Value').fill('blue')
    expect(await axeProblemsInBothThemesAndWidths(page, 'host page, header rules open')).toEqual([])

    // Preload without subdomains is refused at its field, in words.
    await page.getByRole('button', { name: 'Save host' }).click()
    await page.getByText('Include subdomains: must be true with preload').waitFor({ state: 'visible' })
    await page.getByLabel('Include subdomains').check()
    await page.getByRole('button', { name: 'Save host' }).click()
    await page.getByText('Host saved and applied to the proxy.').waitFor({ state: 'visible' })

    const host = (await stack.panel.request(`/api/hosts/${hostId}`, { cookie: stack.admin })).json
    expect(host.header_rules).toEqual([{ direction: 'request', action: 'set', name: 'X-Tenant', value: 'blue' }])
    expect(host.hsts).toEqual({ max_age: 31_536_000, include_subdomains: true, preload: true })
    const res = await eventually(
      () => httpRequest({ port: stack.httpPort, host: HOST, path: '/headers-from-ui' }),
      (r) => r.headers['x-content-type-options'] === 'nosniff',
      15_000,
      200,
    )
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(res.headers['strict-transport-security']).toBeUndefined()
    expect(up.requests.findLast((r) => r.url === '/headers-from-ui')!.headers['x-tenant']).toBe('blue')
  })

  it('an identity header is refused at its field with the reason', async () => {
    await page.goto(`${stack.panel.url}/hosts/${hostId}`)
    await page.getByText('Advanced: header rules (1)').waitFor({ state: 'visible' })
    await page.getByLabel('Name').fill('X-Auth-User')
    await page.getByRole('button', { name: 'Save host' }).click()
    await page.getByText(/Header rule 1 name: is refused: X-Auth-User: the X-Auth-\* headers/).waitFor({ state: 'visible' })
    expect((await stack.panel.request(`/api/hosts/${hostId}`, { cookie: stack.admin })).json.header_rules[0].name).toBe('X-Tenant')
    // The two refusals of this file (preload without subdomains, the identity header) are the scenario.
    expect(consoleErrors.filter((e) => !/status of 400 .*\/api\/hosts\/\d+$/.test(e))).toEqual([])
  })
})
