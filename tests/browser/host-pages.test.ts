import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { createPublicClientNamespace, type PublicClientNamespace } from '../support/netns'
import { ADMIN } from '../support/panel'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, screenshot } from './browser'

// The host form's own answers and raw handlers in a real Chromium: the escape hatch
// (docs/hosts.md, "Custom handlers") is set on the host page, refused there with the
// reason under its field, marked on the hosts list, and checked through the production
// proxy from a public client (network namespace on 198.51.100.0/24).

const HOST = 'hatch.example.test'
const HOST_ADDRESS = '198.51.100.1'
const CLIENT = '198.51.100.60'
const SNIPPET = [
  {
    handler: 'subroute',
    routes: [{ match: [{ path: ['/hatch'] }], handle: [{ handler: 'static_response', status_code: 200, body: 'from the escape hatch' }] }],
  },
  { handler: 'headers', response: { set: { 'X-Hatch': ['on'] } } },
]

let stack: ProxyStack
let up: TestUpstream
let ns: PublicClientNamespace
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let hostId: number
const consoleErrors: string[] = []

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: HOST_ADDRESS, clientAddresses: [CLIENT] })
  stack = await startProxyStack({ httpListenExtra: [HOST_ADDRESS], env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const res = await createHost(stack, { domain: HOST, target_group_id: group.id, bouncer_enabled: false })
  expect(res.status, res.text).toBe(201)
  hostId = res.json.id
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  page.on('dialog', (d) => d.accept())
}, 120_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

const expectVisible = (l: Locator) => l.waitFor({ state: 'visible' })
const fromClient = (path: string) =>
  ns.curl(`http://${HOST_ADDRESS}:${stack.httpPort}${path}`, ['-i', '-H', `Host: ${HOST}`], { fromAddress: CLIENT })
const storedHandlers = async () => (await stack.panel.request(`/api/hosts/${hostId}`, { cookie: stack.admin })).json.custom_handlers

describe('custom handlers on the host page', () => {
  it('are behind an advanced disclosure with a warning; saved, they are served by the proxy', async () => {
    await page.goto(`${stack.panel.url}/login`)
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL((u) => !u.pathname.startsWith('/login'))
    await page.goto(`${stack.panel.url}/hosts/${hostId}`)
    const textarea = page.getByLabel(/^Handlers \(a JSON list/)
    await page.getByLabel('Domain').waitFor()
    expect(await textarea.isVisible()).toBe(false)
    await page.getByText('Advanced: custom proxy handlers').click()
    await expectVisible(page.getByText('These handlers go to the proxy as written'))

    await textarea.fill('[{"handler": ')
    await expectVisible(page.getByText(/^Not valid JSON: /))
    await textarea.fill(JSON.stringify(SNIPPET, null, 2))
    await expect(page.getByText(/^Not valid JSON/).count()).resolves.toBe(0)
    await page.getByLabel('Where they run').selectOption('before_proxy')
    await page.getByRole('button', { name: 'Save host' }).click()
    await expectVisible(page.getByRole('status').filter({ hasText: 'Host saved and applied to the proxy.' }))
    await expectVisible(page.locator('summary').getByText('2 custom handlers'))
    expect(await storedHandlers()).toEqual(SNIPPET)

    const hatch = await fromClient('/hatch')
    expect(hatch.status).toBe(200)
    expect(hatch.body).toContain('from the escape hatch')
    const proxied = await fromClient('/app')
    expect(proxied.body).toMatch(/^x-hatch: on\r?$/im)
    await screenshot(page, 'host-custom-handlers')
    expect(await axeProblemsInBothThemesAndWidths(page, 'host page, custom handlers open')).toEqual([])
  })

  it('a forbidden module is refused under the field, naming it; nothing is saved', async () => {
    const textarea = page.getByLabel(/^Handlers \(a JSON list/)
    await textarea.fill(JSON.stringify([{ handler: 'subroute', routes: [{ handle: [{ handler: 'file_server', root: '/' }] }] }]))
    await page.getByRole('button', { name: 'Save host' }).click()
    await expectVisible(page.getByText(/the module "file_server" is not allowed in custom handlers/).first())
    expect(await storedHandlers()).toEqual(SNIPPET)
    expect((await fromClient('/hatch')).body).toContain('from the escape hatch')
    expect(await axeProblemsInBothThemesAndWidths(page, 'host page, custom handlers refused')).toEqual([])
  })

  it('the hosts list marks the host', async () => {
    await page.goto(`${stack.panel.url}/hosts`)
    const row = page.getByRole('row').filter({ hasText: HOST })
    await expectVisible(row.getByText('custom handlers', { exact: true }))
    expect(await axeProblemsInBothThemesAndWidths(page, 'hosts list, a host with custom handlers')).toEqual([])
    // The one refusal of the test before (the forbidden module) is the only failed request.
    expect(consoleErrors).toEqual([expect.stringMatching(/status of 400 \(Bad Request\) @ http:\/\/127\.0\.0\.1:\d+\/api\/hosts\/1$/)])
  })
})
