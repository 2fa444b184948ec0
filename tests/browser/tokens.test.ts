import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { ADMIN, registerTestSecret, startPanel, type PanelHandle } from '../support/panel'
import { firstPage, launchChromium, screenshot } from './browser'

// The Tokens screen in Chromium: create a token, see its secret once with a
// warning when it never expires, copy it, use it from a script, revoke it.

let panel: PanelHandle
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const consoleErrors: string[] = []

beforeAll(async () => {
  panel = await startPanel({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  chrome = await launchChromium()
  await chrome.browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: panel.url })
  page = await firstPage(chrome, consoleErrors)
  page.on('dialog', (d) => {
    void d.accept()
  })
}, 60_000)
afterAll(async () => {
  await chrome?.close()
  await panel?.stop()
})

describe('Tokens screen', () => {
  it('creates a token, shows and copies its secret once, and revokes it', async () => {
    await page.goto(`${panel.url}/login?rd=/tokens`)
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`${panel.url}/tokens`)
    await page.getByRole('heading', { name: 'API tokens' }).waitFor()

    await page.getByLabel('Name').fill('ci deploy')
    await page.getByLabel('Scope').selectOption('admin')
    await page.getByLabel('Expires').selectOption('never')
    await page.getByRole('button', { name: 'Create token' }).click()
    const secretBox = page.getByLabel('Token secret')
    await secretBox.waitFor()
    const secret = await secretBox.inputValue()
    expect(secret).toMatch(/^ept_[A-Za-z0-9_-]{43}$/)
    registerTestSecret(secret)
    await page.getByText('Warning: this token never expires').waitFor()
    await page.getByRole('button', { name: 'Copy', exact: true }).click()
    await page.getByRole('button', { name: 'Copied' }).waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret)
    await screenshot(page, 'tokens')

    // The script side: the copied secret works as a Bearer token.
    const used = await panel.request('/api/hosts', { headers: { authorization: `Bearer ${secret}` } })
    expect(used.status).toBe(200)

    // Shown once: after Done and a reload, the page no longer holds it.
    await page.getByRole('button', { name: 'Done' }).click()
    await page.reload()
    await page.getByRole('cell', { name: 'ci deploy', exact: true }).waitFor()
    expect(await page.content()).not.toContain(secret)
    await page.getByText(/from 127\.0\.0\.1/).waitFor()

    await page.getByRole('button', { name: 'Revoke token ci deploy' }).click()
    await page.getByText('Token "ci deploy" revoked.').waitFor()
    await page.getByText('revoked', { exact: true }).waitFor()
    expect((await panel.request('/api/hosts', { headers: { authorization: `Bearer ${secret}` } })).status).toBe(401)
    expect(consoleErrors).toEqual([])
  })
})
