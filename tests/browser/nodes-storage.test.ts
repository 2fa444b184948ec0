import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { registerTestSecret } from '../support/panel'
import { startRedis, type RedisHandle } from '../support/redis'
import { startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, screenshot, signInAsAdmin } from './browser'

// The Nodes screen's "Certificate storage" section in Chromium against the built panel,
// the production Caddy and a real redis-server: the storage in words, switching to
// Redis from the form (its password shown only as set), each node's storage state in
// the table (working, then failing once Redis stops), axe in both themes and widths.

const PASSWORD = 'redis-ui-pw-3b7e9d1f5a'
registerTestSecret(PASSWORD)

let redis: RedisHandle
let stack: ProxyStack
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const consoleErrors: string[] = []

beforeAll(async () => {
  redis = await startRedis({ password: PASSWORD })
  // The browser reaches the panel at 127.0.0.1: its cookie is for that name.
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
}, 90_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await redis?.stop()
})

const storageCell = () => page.getByTestId('node-storage-1')
const section = () => page.getByRole('region', { name: 'Certificate storage' })

describe('Certificate storage on the Nodes screen', () => {
  it('shows the folder storage and the node reporting it, in words', async () => {
    await signInAsAdmin(page, stack.panel.url)
    await page.goto(`${stack.panel.url}/nodes`)
    await section().getByRole('heading', { name: 'Certificate storage' }).waitFor()
    await section().getByText('Now: a folder every node shares (PROXY_DATA_DIR).').waitFor()
    expect(
      await section()
        .getByLabel(/A folder every node shares/)
        .isChecked(),
    ).toBe(true)
    await section().getByTestId('storage-switch-note').waitFor()
    // The node's own answer about its storage (the screen polls every 5 s, the panel looks every 10 s).
    await storageCell().getByText('working').waitFor({ timeout: 30_000 })
    await storageCell()
      .getByText(/^folder, answered in \d+ ms/)
      .waitFor()
    expect(await axeProblemsInBothThemesAndWidths(page, 'nodes storage (folder)')).toEqual([])
  })

  it('switches to Redis from the form; the password shows as set, the node reports Redis working', async () => {
    await section().getByLabel('Redis (no shared folder)').check()
    await section().getByLabel('Setup').selectOption('single')
    await section()
      .getByLabel(/Server address/)
      .fill(redis.address)
    await section()
      .getByLabel(/Redis password \(not set\)/)
      .waitFor()
    await section()
      .getByLabel(/Redis password/)
      .fill(PASSWORD)
    await section()
      .getByLabel(/Key prefix/)
      .fill('ui-fleet')
    expect(await axeProblemsInBothThemesAndWidths(page, 'nodes storage (Redis form)')).toEqual([])
    await section().getByRole('button', { name: 'Save storage' }).click()
    await section().getByText('Certificate storage saved: every node now uses it.').waitFor()
    await section().getByText(`Now: Redis: one Redis server at ${redis.address}; keys start with "ui-fleet".`).waitFor()
    expect(
      await section()
        .getByLabel(/Redis password \(set\)/)
        .inputValue(),
    ).toBe('')
    await section().getByLabel('Remove the Redis password').waitFor()
    await storageCell()
      .getByText(/^Redis, answered in \d+ ms/)
      .waitFor({ timeout: 40_000 })
    await screenshot(page, 'nodes-storage-redis')
    expect(await axeProblemsInBothThemesAndWidths(page, 'nodes storage (Redis)')).toEqual([])
  })

  it('shows the node failing once Redis stops', async () => {
    await redis.stop()
    await storageCell().getByText('failing').waitFor({ timeout: 40_000 })
    await storageCell()
      .getByText(/^Redis: /)
      .waitFor()
    expect(await axeProblemsInBothThemesAndWidths(page, 'nodes storage (failing)')).toEqual([])
    // No engine runs in this stack: its machines list answers 503 (the screen says so in its card).
    expect(consoleErrors.filter((e) => !e.includes('/api/security/machines'))).toEqual([])
  })
})
