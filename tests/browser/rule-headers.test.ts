import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, signInAsAdmin } from './browser'

// Header rules of a path rule on the host page (docs/hosts.md, "Header rules"), in a real
// Chromium against the built panel, the production proxy and a real upstream: what is
// entered in the rule's headers is checked by requests through the proxy.

const HOST = 'rule-headers.example.test'

let stack: ProxyStack
let up: TestUpstream
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let hostId: number
let ruleId: number
const consoleErrors: string[] = []

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const res = await createHost(stack, { domain: HOST, target_group_id: group.id })
  expect(res.status, res.text).toBe(201)
  hostId = res.json.id
  const rule = await stack.panel.request(`/api/hosts/${hostId}/rules`, {
    method: 'POST',
    cookie: stack.admin,
    body: { path: '/api/*', action: 'proxy' },
  })
  expect(rule.status, rule.text).toBe(201)
  ruleId = rule.json.id
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

const ruleForm = () => page.locator('form.rule-form')
const throughProxy = (path: string) => httpRequest({ port: stack.httpPort, host: HOST, path })

async function openRule() {
  await page.goto(`${stack.panel.url}/hosts/${hostId}`)
  await page.getByRole('button', { name: 'Edit rule /api/*' }).click()
  // The list opens by itself when the rule has header rules, and is closed otherwise.
  const details = ruleForm().getByTestId('rule-headers')
  if (!(await details.evaluate((d) => (d as HTMLDetailsElement).open))) await details.locator('summary').click()
}

describe('header rules of a path rule in the web UI', () => {
  it('headers entered on a rule reach the upstream and the visitor on its paths only; the open list passes axe', async () => {
    await openRule()
    const form = ruleForm()
    await form.getByRole('button', { name: 'Add a header rule' }).click()
    const first = form.getByTestId('rule-header-0')
    await first.getByLabel('Header 1 goes').selectOption('request')
    await first.getByLabel('Name').fill('X-From-Rule')
    await first.getByLabel('Value').fill('ui')
    await form.getByRole('button', { name: 'Add a header rule' }).click()
    const second = form.getByTestId('rule-header-1')
    await second.getByLabel('Name').fill('X-Rule-Says')
    await second.getByLabel('Value').fill('hello')
    expect(await axeProblemsInBothThemesAndWidths(page, "host page, a rule's headers open")).toEqual([])
    await form.getByRole('button', { name: 'Save rule' }).click()
    await page.getByText('Rule saved.').waitFor({ state: 'visible' })
    await page.getByRole('cell', { name: /proxy to host default, 2 header rules/ }).waitFor({ state: 'visible' })

    // The save answers once the proxy has the new configuration.
    const onApi = await throughProxy('/api/items')
    expect(onApi.headers['x-rule-says']).toBe('hello')
    expect(up.requests.findLast((r) => r.url === '/api/items')!.headers['x-from-rule']).toBe('ui')
    const elsewhere = await throughProxy('/page')
    expect(elsewhere.headers['x-rule-says']).toBeUndefined()
    expect(up.requests.findLast((r) => r.url === '/page')!.headers['x-from-rule']).toBeUndefined()
  })

  it('a refused header name is shown at its field and nothing changes', async () => {
    const before = (await stack.panel.request(`/api/hosts/${hostId}/rules`, { cookie: stack.admin })).json
    await openRule()
    const first = ruleForm().getByTestId('rule-header-0')
    await first.getByLabel('Name').fill('X-Auth-User')
    await ruleForm().getByRole('button', { name: 'Save rule' }).click()
    await first.getByText(/Header rule 1 name: is refused: X-Auth-User/).waitFor({ state: 'visible' })
    expect(await first.getByLabel('Name').getAttribute('aria-invalid')).toBe('true')
    expect((await stack.panel.request(`/api/hosts/${hostId}/rules`, { cookie: stack.admin })).json).toEqual(before)
    expect(before.find((r: any) => r.id === ruleId).header_rules.map((h: any) => h.name)).toEqual(['X-From-Rule', 'X-Rule-Says'])
    expect(consoleErrors.filter((e) => !/400/.test(e))).toEqual([])
  })
})
