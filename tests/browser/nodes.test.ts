import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { startCaddy, type CaddyHandle } from '../support/caddy'
import { LAPI_USER_AGENT, panelEnvFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { ADMIN } from '../support/panel'
import { eventually, httpRequest } from '../support/http'
import { startTestUpstream } from '../support/upstream'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { firstPage, launchChromium, screenshot } from './browser'

// The Nodes screen in Chromium against the built panel and two production Caddy
// processes: node 1 (PROXY_ADMIN_URL) listed as the canary, a second node added
// from the form with a bouncer key of its own (it then holds the configuration and its
// bouncer's last pull shows), disabled, and deleted; the engine's machines (a real
// CrowdSec local API), a node's agent pending until validated.

let stack: ProxyStack
let second: CaddyHandle
let up: Awaited<ReturnType<typeof startTestUpstream>>
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let cs: CrowdsecHandle
const consoleErrors: string[] = []
const DOMAIN = 'ui.nodes.example.test'

beforeAll(async () => {
  up = await startTestUpstream()
  cs = await startCrowdsec({ agent: false })
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '', ...panelEnvFor(cs) } })
  second = await startCaddy()
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  page.on('dialog', (d) => {
    void d.accept()
  })
}, 90_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await second?.stop()
  await cs?.stop()
  await up?.stop()
})

const row = (name: string) =>
  page
    .getByRole('table', { name: 'Proxy nodes' })
    .getByRole('row')
    .filter({ has: page.getByRole('cell', { name: new RegExp(`^${name}`) }) })

describe('Nodes screen', () => {
  it('lists the canary, adds a node that then holds the configuration, disables and deletes it', async () => {
    const group = await createGroup(stack, { name: 'ui', targets: [{ address: `127.0.0.1:${up.port}` }] })
    expect((await createHost(stack, { domain: DOMAIN, target_group_id: group.id })).status).toBe(201)

    await page.goto(`${stack.panel.url}/login?rd=/nodes`)
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`${stack.panel.url}/nodes`)
    await page.getByRole('heading', { name: 'Proxy nodes' }).waitFor()
    await row('node-1').getByRole('cell', { name: 'node-1 canary', exact: true }).waitFor()
    await row('node-1').getByText('reachable').waitFor()

    await page.getByRole('button', { name: 'Add node' }).click()
    await page.getByLabel('Node name').fill('edge-2')
    await page.getByLabel('Admin URL').fill(second.adminUrl)
    await page.getByLabel('Labels (comma-separated)').fill('region=lab, ui')
    const bouncerKey = (await cs.cscli(['bouncers', 'add', 'edge-2-bouncer', '-o', 'raw'])).trim()
    await page.getByLabel('Bouncer key').fill(bouncerKey)
    await page.getByRole('button', { name: 'Save node' }).click()
    await page.getByText('Node edge-2 saved.').waitFor()
    await row('edge-2').getByText('in sync').waitFor()
    await row('edge-2').getByText('region=lab, ui').waitFor()
    // Each node's bouncer as the engine knows it, after its first pull (the screen polls every 5 s).
    await row('edge-2').getByText('own key').waitFor()
    await row('edge-2').getByText('edge-2-bouncer').waitFor()
    await row('node-1').getByText('panel-bouncer').waitFor()
    await row('node-1').getByText('shared key').waitFor()
    // The first pull lands a moment after the node holds the configuration: wait for a time, not "never".
    await row('edge-2')
      .getByText(/^last pull \d{4}-/)
      .waitFor()
    await row('node-1')
      .getByText(/^last pull \d{4}-/)
      .waitFor()
    expect(await page.content()).not.toContain(bouncerKey)
    const held = await eventually(
      () => second.getConfig(),
      (c) => JSON.stringify(c).includes(DOMAIN),
    )
    expect((held as any).admin.listen).toBe(second.adminListen)
    // The node's engine agent registers with the local API: pending until validated on the engine.
    const register = await fetch(`${cs.url}/v1/watchers`, {
      method: 'POST',
      headers: { 'user-agent': LAPI_USER_AGENT, 'content-type': 'application/json' },
      body: JSON.stringify({ machine_id: 'edge-2', password: 'browser-test-password-1' }),
    })
    expect(register.status).toBe(201)
    await page.reload()
    const machine = page.getByRole('table', { name: 'Engine machines' }).getByRole('row').filter({ hasText: 'edge-2' })
    await machine.getByText('pending').waitFor()
    await screenshot(page, 'nodes')
    await cs.cscli(['machines', 'validate', 'edge-2'])
    await page.reload()
    await machine.getByText('validated').waitFor()

    await page.getByRole('button', { name: 'Edit node edge-2' }).click()
    await page.getByLabel('Enabled').uncheck()
    await page.getByRole('button', { name: 'Save node' }).click()
    await page.getByText('Node edge-2 saved.').waitFor()
    await row('edge-2').getByText('disabled').waitFor()
    expect((await stack.panel.request('/api/nodes', { cookie: stack.admin })).json.find((n: any) => n.name === 'edge-2').enabled).toBe(
      false,
    )

    await page.getByRole('button', { name: 'Delete node edge-2' }).click()
    await page.getByText('Node edge-2 removed.').waitFor()
    await expect.poll(() => row('edge-2').count()).toBe(0)
    expect((await stack.panel.request('/api/nodes', { cookie: stack.admin })).json.map((n: any) => n.name)).toEqual(['node-1'])
    expect(consoleErrors).toEqual([])
  })
})

describe('Logs screen with several nodes', () => {
  it('shows the node of each row and filters by node', async () => {
    const added = await stack.panel.request('/api/nodes', {
      method: 'POST',
      cookie: stack.admin,
      body: { name: 'edge-3', admin_url: second.adminUrl },
    })
    expect(added.status, added.text).toBe(201)
    await eventually(
      async () => (await stack.panel.request('/api/nodes', { cookie: stack.admin })).json as any[],
      (list) => list.every((n) => n.status.in_sync === true),
    )
    // New connections spread over both nodes (they share the HTTP port): send until each has rows.
    const byNode = async () => {
      const rows = (await stack.panel.request(`/api/logs?host_domain=${DOMAIN}&path=/by-node/&limit=1000`, { cookie: stack.admin }))
        .json as any[]
      return new Set(rows.map((r) => r.node))
    }
    for (let i = 0; i < 200 && (await byNode()).size < 2; i++)
      await httpRequest({ port: stack.httpPort, host: DOMAIN, path: `/by-node/${i}` })
    await eventually(byNode, (s) => s.has('node-1') && s.has('edge-3'))

    await page.goto(`${stack.panel.url}/logs?path=/by-node/`)
    const table = page.getByRole('table', { name: 'Log rows' })
    await table.getByRole('columnheader', { name: 'Node' }).waitFor()
    const cells = (name: string) => table.getByRole('cell', { name, exact: true })
    // Each node chosen in the filter: its rows only, whatever share of the traffic it served.
    for (const [shown, hidden] of [
      ['node-1', 'edge-3'],
      ['edge-3', 'node-1'],
    ]) {
      await page.getByLabel('Proxy node').selectOption({ label: shown })
      await page.getByRole('button', { name: 'Apply filters' }).click()
      await cells(shown).first().waitFor()
      await expect.poll(() => cells(hidden).count()).toBe(0)
    }
    expect(page.url()).toMatch(/node_id=/)
    await screenshot(page, 'logs-nodes')
    expect(consoleErrors).toEqual([])
  })
})
