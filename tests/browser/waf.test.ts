import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { eventually } from '../support/http'
import { createPublicClientNamespace, type PublicClientNamespace } from '../support/netns'
import { ADMIN } from '../support/panel'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { firstPage, launchChromium, screenshot } from './browser'

// The WAF's screens in a real Chromium: a false positive seen on the Logs screen is
// excluded in one click, the host page lists and removes it, and the host's allowed
// content types are edited there; every effect is checked through the real proxy
// from a public client (network namespace on 198.51.100.0/24).

const HOST = 'hooks.example.test'
const HOST_ADDRESS = '198.51.100.1'
const CLIENT = '198.51.100.50'

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
  page.on('dialog', (d) => d.accept())
}, 120_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

const expectVisible = (l: Locator) => l.waitFor({ state: 'visible' })
const webhook = async (path: string) =>
  (
    await ns.curl(
      `http://${HOST_ADDRESS}:${stack.httpPort}${path}`,
      ['-H', `Host: ${HOST}`, '-X', 'POST', '-H', 'Content-Type: text/plain', '--data-binary', 'delivery'],
      { fromAddress: CLIENT },
    )
  ).status

describe('the WAF in the web UI', () => {
  it("excludes a refused webhook's rule from its Logs row in one click, for that path only", async () => {
    expect(await webhook('/webhook?t=ui-before')).toBe(403)
    const rows = await eventually(
      async () => (await stack.panel.request('/api/logs?source=waf_audit&limit=50', { cookie: stack.admin })).json as any[],
      (r) => r.some((x) => x.path === '/webhook?t=ui-before'),
      15_000,
      200,
    )
    const row = rows.find((x) => x.path === '/webhook?t=ui-before')
    expect(row.waf_rule_id).toBe(920420)

    await page.goto(`${stack.panel.url}/login`)
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL((u) => !u.pathname.startsWith('/login'))
    await page.goto(`${stack.panel.url}/logs?source=waf_audit`)
    await page.getByRole('row', { name: `Log row ${row.id}` }).click()
    await page.getByRole('button', { name: 'Exclude rule 920420 on /webhook' }).click()
    await expectVisible(page.getByRole('status').filter({ hasText: 'Rule 920420 no longer applies to hooks.example.test under /webhook' }))
    await screenshot(page, 'waf-exclude-from-log')

    expect(await webhook('/webhook?t=ui-after')).toBe(200)
    expect(await webhook('/elsewhere?t=ui-elsewhere')).toBe(403)
  })

  it('the host page shows the profile and the exclusion, edits the allowed content types and removes the exclusion', async () => {
    await page.goto(`${stack.panel.url}/hosts/${hostId}`)
    await expect(page.getByLabel('WAF profile').inputValue()).resolves.toBe('fast')
    const table = page.getByRole('region', { name: 'WAF rule exclusions' })
    await expectVisible(table.getByRole('cell', { name: 'path /webhook, every argument' }))
    await expect(table.getByRole('cell', { name: '920420', exact: true }).count()).resolves.toBe(1)

    // The CRS default plus text/plain, then saved: text/plain passes on every path.
    await page.getByRole('button', { name: 'Allow text/plain' }).click()
    await expect(page.getByLabel(/^Allowed request content types/).inputValue()).resolves.toMatch(/application\/json, text\/plain$/)
    await page.getByRole('button', { name: 'Save host' }).click()
    await expectVisible(page.getByRole('status').filter({ hasText: 'Host saved and applied to the proxy.' }))
    expect((await stack.panel.request(`/api/hosts/${hostId}`, { cookie: stack.admin })).json.waf_allowed_content_types).toContain(
      'text/plain',
    )
    expect(await webhook('/elsewhere?t=ui-types')).toBe(200)
    await screenshot(page, 'waf-host')

    await table.getByRole('button', { name: 'Remove exclusion of rule 920420' }).click()
    await expectVisible(table.getByText('No exclusions: every rule of the profile applies.'))
    expect((await stack.panel.request(`/api/hosts/${hostId}/waf-exclusions`, { cookie: stack.admin })).json).toEqual([])
    expect(consoleErrors).toEqual([])
  })
})
