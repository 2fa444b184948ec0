import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { startPanel, type PanelHandle } from '../support/panel'
import { firstPage, launchChromium } from './browser'

// The Logs screen when the panel refuses a live tail (issue 33: at most 4 tails per
// session, a 429 past it). A browser's EventSource does not retry after a 429, so the
// screen must say that the tail stopped and what to do, not "reconnecting…" forever.

let panel: PanelHandle
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const held: Array<ReadableStreamDefaultReader<Uint8Array>> = []

beforeAll(async () => {
  // The browser talks to 127.0.0.1: no cookie Domain (an IP has no parent domain).
  panel = await startPanel({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  chrome = await launchChromium()
  page = await firstPage(chrome, [])
}, 60_000)
afterAll(async () => {
  await Promise.all(held.map((r) => r.cancel().catch(() => {})))
  await chrome?.close()
  await panel?.stop()
})

describe('Logs screen, live tail refused', () => {
  it('says the tail stopped and what to close; once a tail is closed it goes live again', async () => {
    const cookie = await panel.login()
    await chrome.browser.addCookies([{ name: 'panel_session', value: cookie.split('=')[1]!, url: panel.url }])
    // The same session follows the logs in four other places already.
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${panel.url}/api/logs/tail`, { headers: { cookie } })
      const reader = res.body!.getReader()
      await reader.read() // ": connected"
      held.push(reader)
    }
    // The tail's state badge (the screen has other status lines while it loads).
    const tailState = page.locator('.badge[role="status"]')
    await page.goto(`${panel.url}/logs`)
    await page.getByRole('button', { name: 'Live tail' }).click()
    await tailState.filter({ hasText: 'stopped: the panel refused the tail (at most 4 per session)' }).waitFor()
    await page.getByRole('button', { name: 'Stop live tail' }).click()
    await held.shift()!.cancel()
    await page.getByRole('button', { name: 'Live tail' }).click()
    // The panel frees the place when it sees that connection end; a click that came first is
    // refused again, and the operator would simply start the tail once more.
    await expect
      .poll(async () => {
        const text = (await tailState.textContent())?.trim()
        if (text?.startsWith('stopped')) {
          await page.getByRole('button', { name: 'Stop live tail' }).click()
          await page.getByRole('button', { name: 'Live tail' }).click()
        }
        return text
      })
      .toBe('live')
  })
})
