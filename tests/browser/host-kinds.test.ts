import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { httpRequest } from '../support/http'
import { createGroup, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, signInAsAdmin } from './browser'

// Host kinds on the host form in a real Chromium (docs/hosts.md, "Host kinds"): the kind
// comes first and only its fields show; every host made is checked through the production Caddy.

let stack: ProxyStack
let up: TestUpstream
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const consoleErrors: string[] = []

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
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

const expectVisible = (l: Locator) => l.waitFor({ state: 'visible' })
const through = (host: string, path = '/') => httpRequest({ port: stack.httpPort, host, path })

async function newHost(domain: string, kind: string) {
  await page.goto(`${stack.panel.url}/hosts/new`)
  await page.getByRole('heading', { level: 1, name: 'New host' }).waitFor()
  await page.getByLabel('What this host does').selectOption({ label: kind })
  await page.getByLabel('Domain').fill(domain)
  await page.getByLabel('TLS mode').selectOption({ label: 'None (plain HTTP)' })
}
async function create() {
  await page.getByRole('button', { name: 'Create host' }).click()
  await expectVisible(page.getByText('Host created and applied to the proxy.'))
}

describe('host kinds on the host form', () => {
  it('a proxy host (the default) shows the target group and no kind fields', async () => {
    await page.goto(`${stack.panel.url}/hosts/new`)
    await page.getByRole('heading', { level: 1, name: 'New host' }).waitFor()
    expect(await page.getByLabel('What this host does').inputValue()).toBe('proxy')
    expect(await page.getByLabel('Target group').isVisible()).toBe(true)
    expect(await page.getByLabel('Redirect to').count()).toBe(0)
    expect(await axeProblemsInBothThemesAndWidths(page, 'host form, proxy')).toEqual([])
  })

  it('a redirect host: only its fields; the proxy redirects with the status and keeps the path', async () => {
    await newHost('redir.example.test', 'Redirect')
    expect(await page.getByLabel('Target group').count()).toBe(0)
    await page.getByLabel('Redirect to').fill('https://new.example.test/base')
    await page.getByLabel('Redirect status').selectOption('308')
    expect(await axeProblemsInBothThemesAndWidths(page, 'host form, redirect')).toEqual([])
    await create()
    const res = await through('redir.example.test', '/a?b=1')
    expect([res.status, res.headers.location]).toEqual([308, 'https://new.example.test/base/a?b=1'])
  })

  it('a refused redirect target is shown at its field, in words, and nothing is created', async () => {
    await newHost('loop.example.test', 'Redirect')
    await page.getByLabel('Redirect to').fill('https://loop.example.test/')
    await page.getByRole('button', { name: 'Create host' }).click()
    await expectVisible(page.getByText(/points at this host's own name/).first())
    expect((await through('loop.example.test')).status).toBe(404)
  })

  it('a fixed page: status, type and body as typed', async () => {
    await newHost('gone.example.test', 'Fixed page')
    await page.getByLabel('Status', { exact: true }).fill('410')
    await page.getByLabel('Content type').fill('text/html; charset=utf-8')
    await page.getByLabel('Page (up to 64 KiB)').fill('<p>Gone {for good}</p>')
    expect(await axeProblemsInBothThemesAndWidths(page, 'host form, fixed page')).toEqual([])
    await create()
    const res = await through('gone.example.test', '/x')
    expect([res.status, res.headers['content-type'], res.body]).toEqual([410, 'text/html; charset=utf-8', '<p>Gone {for good}</p>'])
  })

  it('a maintenance page: 503 with Retry-After; a loopback bypass reaches the target group', async () => {
    await newHost('maint.example.test', 'Maintenance page')
    await page.getByLabel('Retry after (seconds)').fill('90')
    await page.getByLabel('Page (up to 64 KiB)').fill('Back at noon.')
    expect(await axeProblemsInBothThemesAndWidths(page, 'host form, maintenance')).toEqual([])
    await create()
    const res = await through('maint.example.test', '/x')
    expect([res.status, res.headers['retry-after'], res.body]).toEqual([503, '90', 'Back at noon.'])
    await page.getByLabel('Addresses that still reach the site (comma separated)').fill('127.0.0.1')
    await page.getByLabel('Target group (for the addresses that still reach the site)').selectOption({ label: 'app' })
    await page.getByRole('button', { name: 'Save host' }).click()
    await expectVisible(page.getByText('Host saved and applied to the proxy.'))
    expect((await through('maint.example.test', '/inside')).status).toBe(200)
    expect(up.requests.at(-1)!.url).toBe('/inside')
  })

  it('the hosts list says what each host does', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Hosts' }).click()
    await page.getByRole('heading', { level: 1, name: 'Hosts' }).waitFor()
    const row = (d: string) => page.locator('tbody tr').filter({ hasText: d })
    await expectVisible(row('redir.example.test').getByText('Redirect (308) to https://new.example.test/base'))
    await expectVisible(row('gone.example.test').getByText('Fixed page (410)'))
    await expectVisible(row('maint.example.test').getByText('Maintenance page (503)'))
    expect(await axeProblemsInBothThemesAndWidths(page, 'hosts list with kinds')).toEqual([])
    // The refused create above is the one request that failed (the browser logs its 400).
    expect(consoleErrors.filter((e) => !/status of 400/.test(e))).toEqual([])
  })
})
