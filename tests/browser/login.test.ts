import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { startPanel, type PanelHandle } from '../support/panel'
import { generateHOTP } from '@oslojs/otp'
import { decodeBase32IgnorePadding } from '@oslojs/encoding'
import { firstPage, launchChromium, screenshot } from './browser'

// The login screen on a fresh panel: first-run setup, the OIDC button, oidc_error in
// words, `rd`, and a phone-width layout. No proxy or engine needed here.

const OWNER = { email: 'owner@example.test', password: 'owner-password-123', name: 'Owner' }
let panel: PanelHandle
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const consoleErrors: string[] = []

beforeAll(async () => {
  panel = await startPanel({ setupAdmin: false, env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
}, 60_000)
afterAll(async () => {
  await chrome?.close()
  await panel?.stop()
})

async function sessionCookieFromPage(): Promise<string> {
  const cookie = (await chrome.browser.cookies()).find((c) => c.name === 'panel_session')
  return `panel_session=${cookie!.value}`
}

describe('login screen', () => {
  it('offers first-run setup while no user exists, then goes to rd', async () => {
    await page.goto(`${panel.url}/login?rd=/settings`)
    await page.getByRole('heading', { name: 'Create the first admin' }).waitFor()
    await page.getByLabel('Name').fill(OWNER.name)
    await page.getByLabel('Email').fill(OWNER.email)
    await page.getByLabel('Password (at least 12 characters)').fill(OWNER.password)
    await page.getByRole('button', { name: 'Create admin and sign in' }).click()
    await page.waitForURL(`${panel.url}/settings`)
    await page.getByText(`${OWNER.email} · admin · signed in with local`).waitFor()
    expect((await panel.request('/api/setup')).json).toEqual({ needs_setup: false })
  })

  it('shows the OIDC button when configured, carrying rd, and oidc_error codes in words', async () => {
    const cookie = await panel.login(OWNER.email, OWNER.password)
    const put = await panel.request('/api/settings', {
      method: 'PUT',
      cookie,
      body: { 'oidc.issuer': 'https://id.example.test', 'oidc.client_id': 'panel', 'oidc.display_name': 'Company SSO' },
    })
    expect(put.status).toBe(200)
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL(/\/login/)
    await page.goto(`${panel.url}/login?oidc_error=state_not_found&rd=/logs`)
    await page
      .getByRole('alert')
      .filter({ hasText: 'The single sign-on attempt expired, was already used, or was started in another browser. Please try again.' })
      .waitFor()
    const sso = page.getByRole('link', { name: 'Sign in with Company SSO' })
    expect(await sso.getAttribute('href')).toBe('/api/auth/oidc/login?rd=%2Flogs')
    await page.goto(`${panel.url}/login?oidc_error=something_new`)
    await page.getByRole('alert').filter({ hasText: 'Single sign-on failed (something_new).' }).waitFor()
  })

  it('fits a phone-width screen and works with the keyboard alone', async () => {
    await page.setViewportSize({ width: 360, height: 740 })
    await page.goto(`${panel.url}/login?rd=/logs`)
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360)
    await page.getByLabel('Email').focus()
    await page.keyboard.type(OWNER.email)
    await page.keyboard.press('Tab')
    await page.keyboard.type(OWNER.password)
    await page.keyboard.press('Enter')
    await page.waitForURL(`${panel.url}/logs`)
    await page.getByRole('heading', { name: 'Logs' }).waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360)
    await screenshot(page, 'logs-phone')
  })

  it('enrols TOTP with a QR code, shows recovery codes once, then asks for a code (or a recovery code) at sign-in', async () => {
    await page.setViewportSize({ width: 1280, height: 800 })
    await page.goto(`${panel.url}/settings`)
    await page.getByRole('button', { name: 'Set up two-factor authentication' }).click()
    await page.getByRole('img', { name: 'QR code to scan with an authenticator app' }).waitFor()
    const hint = await page.getByText('Or enter this key by hand:').textContent()
    const secret = decodeBase32IgnorePadding(hint!.split(':')[1]!.trim())
    const step = Math.floor(Date.now() / 30_000)
    await page.getByLabel('Code from the app').fill(generateHOTP(secret, BigInt(step), 6))
    await page.getByRole('button', { name: 'Turn on two-factor authentication' }).click()
    const codes = page.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem')
    await codes.first().waitFor()
    expect(await codes.count()).toBe(10)
    const recovery = (await codes.first().textContent())!.trim()
    const allCodes = (await codes.allTextContents()).map((c) => c.trim())
    // They are shown once: the operator takes them away by clipboard or as a file.
    await chrome.browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: panel.url })
    await page.getByRole('button', { name: 'Copy recovery codes' }).click()
    await page.getByText('Recovery codes copied to the clipboard.').waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(allCodes.join('\n'))
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download recovery codes' }).click(),
    ])
    expect(download.suggestedFilename()).toBe('edge-panel-recovery-codes.txt')
    const file = readFileSync((await download.path())!, 'utf8')
    expect(file.trim().split('\n')).toEqual([`Edge panel recovery codes for ${OWNER.email}`, ...allCodes])

    const signInWith = async (secondFactor: string) => {
      await page.getByRole('button', { name: 'Sign out' }).click()
      await page.waitForURL(/\/login/)
      await page.goto(`${panel.url}/login?rd=/hosts`)
      await page.getByLabel('Email').fill(OWNER.email)
      await page.getByLabel('Password').fill(OWNER.password)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('heading', { name: 'Two-factor code' }).waitFor()
      await page.getByLabel('Authentication or recovery code').fill(secondFactor)
      await page.getByRole('button', { name: 'Verify' }).click()
      await page.waitForURL(`${panel.url}/hosts`)
    }
    // The enrolment used this step's code, and a code is accepted once: the next step's (within ±1) signs in.
    await signInWith(generateHOTP(secret, BigInt(step + 1), 6))
    await signInWith(recovery)
    const me = (await panel.request('/api/auth/session', { cookie: await sessionCookieFromPage() })).json as {
      user: { totp_enabled: boolean }
    }
    expect(me.user.totp_enabled).toBe(true)
  })

  it('logged no console error', () => {
    expect(consoleErrors).toEqual([])
  })
})
