import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { ADMIN } from '../support/panel'
import { httpRequest } from '../support/http'
import { startTestUpstream } from '../support/upstream'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { firstPage, launchChromium, screenshot } from './browser'

// Issue 17 item 5 in Chromium against the production Caddy: the host form's
// "Preview changes" (a dry run: nothing saved, nothing pushed), and the
// Revisions screen's diff and revert, checked through the proxy.

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const consoleErrors: string[] = []
const DOMAIN = 'ui.revisions.example.test'

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  page.on('dialog', (d) => {
    void d.accept()
  })
}, 90_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await up?.stop()
})

const through = () => httpRequest({ port: stack.httpPort, host: DOMAIN, path: '/' })

describe('preview and revisions', () => {
  it('previews a host change without saving it, then shows a revision diff and reverts it', async () => {
    const group = await createGroup(stack, { name: 'ui', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const host = (await createHost(stack, { domain: DOMAIN, target_group_id: group.id })).json
    const heldBefore = JSON.stringify(await stack.caddy.getConfig())

    await page.goto(`${stack.panel.url}/login?rd=/hosts/${host.id}`)
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`${stack.panel.url}/hosts/${host.id}`)
    await page.getByLabel('LAN only').check()
    await page.getByRole('button', { name: 'Preview changes' }).click()
    await page.getByText('Preview: saving would change the proxy configuration').waitFor()
    const changes = page.getByRole('region', { name: 'Changes the save would make' })
    await changes.getByRole('cell', { name: 'LAN only' }).waitFor()
    expect((await stack.panel.request(`/api/hosts/${host.id}`, { cookie: stack.admin })).json.lan_only).toBe(false)
    expect(JSON.stringify(await stack.caddy.getConfig())).toBe(heldBefore)
    await screenshot(page, 'host-preview')

    // A change made elsewhere (disabling the host), then reverted from the Revisions screen.
    const created = (await stack.panel.request('/api/revisions', { cookie: stack.admin })).json[0]
    await stack.panel.request(`/api/hosts/${host.id}/toggle`, { method: 'POST', cookie: stack.admin })
    expect((await through()).body).not.toContain('upstream')
    const disabled = (await stack.panel.request('/api/revisions', { cookie: stack.admin })).json[0]
    await page.goto(`${stack.panel.url}/revisions`)
    await page.getByRole('heading', { name: 'Revisions' }).waitFor()
    await page.getByRole('button', { name: `Show changes of revision ${disabled.id}` }).click()
    const diff = page.getByRole('region', { name: `Changes from revision ${created.id} to ${disabled.id}` })
    await diff.getByRole('cell', { name: 'Enabled' }).waitFor()
    await diff.getByRole('cell', { name: 'off', exact: true }).waitFor()
    await screenshot(page, 'revisions')
    await page.getByRole('button', { name: `Restore this version: revision ${created.id}` }).click()
    const preview = page.getByRole('region', { name: `What restoring revision ${created.id} would change` })
    await preview.getByRole('cell', { name: 'Enabled' }).waitFor()
    expect((await stack.panel.request(`/api/hosts/${host.id}`, { cookie: stack.admin })).json.enabled).toBe(false)
    await page.getByRole('button', { name: `Restore revision ${created.id} now` }).click()
    await page.getByText(`Restored revision ${created.id}, now revision ${disabled.id + 1}.`).waitFor()
    expect((await stack.panel.request(`/api/hosts/${host.id}`, { cookie: stack.admin })).json.enabled).toBe(true)
    expect((await through()).status).toBe(200)
    expect(consoleErrors).toEqual([])
  })
})
