import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { edgeBinaries } from '../support/edge-bins'
import { httpRequest } from '../support/http'
import { registerTestSecret } from '../support/panel'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { firstPage, launchChromium, screenshot, signInAsAdmin } from './browser'

// The Access lists and Import screens in a real Chromium; every effect is checked
// through the production Caddy.
const PASSWORD = 'browser-list-password-5'
registerTestSecret(PASSWORD)

let stack: ProxyStack
let up: TestUpstream
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let hostId: number
const consoleErrors: string[] = []

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '', PANEL_CADDY_BIN: edgeBinaries().caddy } })
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const res = await createHost(stack, { domain: 'guarded.example.test', target_group_id: group.id, bouncer_enabled: false })
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

const expectVisible = (l: Locator) => l.waitFor({ state: 'visible' })
const through = (host: string, auth?: string) =>
  httpRequest({
    port: stack.httpPort,
    host,
    path: '/',
    headers: auth ? { authorization: `Basic ${Buffer.from(auth).toString('base64')}` } : {},
  })

describe('access lists and import in the web UI', () => {
  it('creates a list with a user and a rule, picks it on the host form, and the proxy asks for the password', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Access lists' }).click()
    await page.getByRole('button', { name: 'Add access list' }).click()
    await page.getByLabel('List name').fill('staff')
    await page.getByRole('button', { name: 'Add user' }).click()
    await page.getByLabel('User 1 name').fill('ann')
    await page.getByLabel('User 1 password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Add rule' }).click()
    await page.getByLabel('Rule 1 source').fill('198.51.100.0/24')
    await page.getByRole('button', { name: 'Save access list' }).click()
    await expectVisible(page.getByRole('status').filter({ hasText: 'Access list staff saved.' }))
    await expectVisible(page.getByRole('cell', { name: 'deny 198.51.100.0/24' }))
    await screenshot(page, 'access-lists')

    await page.goto(`${stack.panel.url}/hosts/${hostId}`)
    await page.getByLabel('Access list').selectOption({ label: 'staff' })
    await page.getByRole('button', { name: 'Save host' }).click()
    await expectVisible(page.getByRole('status').filter({ hasText: 'Host saved; its access list applied to the proxy.' }))
    expect((await through('guarded.example.test')).status).toBe(401)
    expect((await through('guarded.example.test', `ann:${PASSWORD}`)).status).toBe(200)
    // The list screen shows the host it protects.
    await page.getByRole('navigation').getByRole('link', { name: 'Access lists' }).click()
    await expectVisible(page.getByRole('cell', { name: 'guarded.example.test' }))
  })

  it('imports a Caddyfile: the dry run lists what would be created, Import creates it and the proxy serves it', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Import' }).click()
    await page.getByLabel('Caddyfile text').fill(`http://imported.example.test {\n\tencode gzip\n\treverse_proxy 127.0.0.1:${up.port}\n}\n`)
    await page.getByRole('button', { name: 'Dry run' }).click()
    await expectVisible(page.getByRole('status').filter({ hasText: 'Dry run: 2 object(s) would be created. Nothing was changed.' }))
    await expectVisible(
      page.getByRole('row', { name: /host imported\.example\.test Caddyfile line 1 None \(plain HTTP\) will be created/ }),
    )
    // `encode gzip` is the host's compression now, nothing left out.
    expect(await page.getByText(/encode has no equivalent/).count()).toBe(0)
    // Nothing was created: the proxy refuses the name as an unknown host (404), the upstream sees nothing.
    const before = up.requests.length
    const unknown = await through('imported.example.test')
    expect(unknown.status).toBe(404)
    expect(unknown.body).toMatch(/^No site is configured for this host/)
    expect(up.requests.length).toBe(before)
    await screenshot(page, 'import-dry-run')
    await page.getByRole('button', { name: 'Import', exact: true }).click()
    await expectVisible(page.getByRole('status').filter({ hasText: 'Imported: 2 object(s) created.' }))
    const served = await through('imported.example.test')
    expect(served.status).toBe(200)
    expect(JSON.parse(served.body).upstream).toBe(up.port)
    const hosts = (await stack.panel.request('/api/hosts', { cookie: stack.admin })).json as Array<{ domain: string; compression: string }>
    expect(hosts.find((h) => h.domain === 'imported.example.test')?.compression).toBe('on')
    expect(consoleErrors).toEqual([])
  })
})
