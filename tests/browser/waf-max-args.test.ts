import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, screenshot, signInAsAdmin } from './browser'

// The fast profile inspects every value of a body by default; an argument limit is the
// operator's choice, and the host form says what it leaves uninspected. In a real Chromium
// against the built panel and the production proxy: each setting saved on screen is checked
// by an injection sent through the proxy behind harmless values.

const HOST = 'api.example.test'

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
  const res = await createHost(stack, {
    domain: HOST,
    target_group_id: group.id,
    bouncer_enabled: false,
    waf_enabled: true,
    waf_mode: 'blocking',
    waf_profile: 'fast',
  })
  expect(res.status, res.text).toBe(201)
  hostId = res.json.id
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  await signInAsAdmin(page, stack.panel.url)
}, 120_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await up?.stop()
})

// Eight values, the injection in the last one.
const injectedLast = JSON.stringify(
  Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`f${i}`, i === 7 ? "1' OR '1'='1" : `value ${i}`])),
)
const statusThroughProxy = async () =>
  (await httpRequest({ port: stack.httpPort, host: HOST, path: '/api/orders', method: 'POST', body: injectedLast })).status
const storedLimit = async () => (await stack.panel.request(`/api/hosts/${hostId}`, { cookie: stack.admin })).json.waf_body_max_args
// The form's own warning, under the limits (the save's message below the form says it too).
const limitWarning = () => page.locator('.waf-settings .notice.warn').filter({ hasText: 'harmless values gets through' })

describe('the argument limit on the host form', () => {
  it('by default every value is inspected and nothing warns', async () => {
    expect(await statusThroughProxy()).toBe(403)
    await page.goto(`${stack.panel.url}/hosts/${hostId}`)
    // The placeholders come with the WAF catalogue: the size limit's says when it has arrived.
    await page.getByPlaceholder('default 16 KiB').waitFor({ state: 'visible' })
    const field = page.getByLabel('Arguments at most')
    await expect(field.getAttribute('placeholder')).resolves.toBe('default: no limit')
    await expect(field.inputValue()).resolves.toBe('')
    await expect(limitWarning().count()).resolves.toBe(0)
  })

  it('a limit set on screen is warned about before and after saving, and lets the late injection through the proxy', async () => {
    await page.getByLabel('Arguments at most').fill('5')
    await limitWarning().filter({ hasText: 'Only the first 5 values of a request body are inspected' }).waitFor({ state: 'visible' })
    await page.getByRole('button', { name: 'Save host' }).click()
    await page
      .getByRole('status')
      .filter({ hasText: `Warnings: host ${HOST}: its WAF argument limit is 5 values of a request body` })
      .waitFor({ state: 'visible' })
    expect(await storedLimit()).toBe(5)
    // The save answered once the proxy held the configuration: the eighth value is no longer inspected.
    expect(await statusThroughProxy()).toBe(200)
    await screenshot(page, 'waf-max-args-warning')
    expect(await axeProblemsInBothThemesAndWidths(page, 'host page, WAF argument limit warning')).toEqual([])

    await page.getByLabel('Past a body limit').selectOption('pass')
    await limitWarning().filter({ hasText: 'A request body with more than 5 values is not inspected at all' }).waitFor({ state: 'visible' })
    // Refused past the limit: nothing goes uninspected, nothing to warn about.
    await page.getByLabel('Past a body limit').selectOption('refuse')
    await limitWarning().waitFor({ state: 'detached' })
    await page.getByLabel('Past a body limit').selectOption('')
  })

  it('cleared, the limit is gone: every value is inspected again and the save has no warning', async () => {
    await page.getByLabel('Arguments at most').fill('')
    await limitWarning().waitFor({ state: 'detached' })
    await page.getByRole('button', { name: 'Save host' }).click()
    await page.getByRole('status').filter({ hasText: 'Host saved and applied to the proxy.' }).waitFor({ state: 'visible' })
    await expect(page.getByRole('status').filter({ hasText: 'Warnings:' }).count()).resolves.toBe(0)
    expect(await storedLimit()).toBeNull()
    expect(await statusThroughProxy()).toBe(403)
    expect(consoleErrors).toEqual([])
  })
})
