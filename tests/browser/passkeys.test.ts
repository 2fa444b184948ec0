import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, CDPSession, Page } from 'playwright-core'
import { generateHOTP } from '@oslojs/otp'
import { decodeBase32IgnorePadding } from '@oslojs/encoding'
import { ADMIN, registerTestSecret, sessionCookieOf, startPanel, type PanelHandle } from '../support/panel'
import { freePort } from '../support/ports'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium } from './browser'

// Passkeys in the browser with Chromium's virtual authenticator (CDP WebAuthn domain:
// a CTAP2 platform authenticator with resident keys and user verification), against
// the built panel: add a key in the account settings, sign in with it, use it as the
// second step beside TOTP, recovery codes still working, and a removed key refused.
// Passkeys involve neither the proxy nor the engine, so the panel runs alone here.
// WebAuthn needs a secure context and a domain as RP ID: the panel is reached at
// http://localhost:<port>, which is PANEL_PUBLIC_URL.

let panel: PanelHandle
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let cdp: CDPSession
let authenticatorId: string
let url: string
const consoleErrors: string[] = []

beforeAll(async () => {
  const port = await freePort()
  url = `http://localhost:${port}`
  panel = await startPanel({ port, env: { PANEL_DOMAIN: 'localhost', PANEL_PUBLIC_URL: url } })
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  cdp = await chrome.browser.newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  const added = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  })
  authenticatorId = added.authenticatorId
}, 60_000)
afterAll(async () => {
  await chrome?.close()
  await panel?.stop()
})

async function signOut() {
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.waitForURL(/\/login/)
}

async function passwordStep() {
  await page.goto(`${url}/login?rd=/hosts`)
  await page.getByLabel('Email').fill(ADMIN.email)
  await page.getByLabel('Password').fill(ADMIN.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
}

const card = () => page.getByRole('region', { name: 'Passkeys' })
let capturedAssertion: string | undefined

describe('passkeys in the account settings and at sign-in', () => {
  it('adds and renames a passkey in the account settings, axe-clean in both themes and widths', async () => {
    await passwordStep()
    await page.waitForURL(`${url}/hosts`)
    await page.goto(`${url}/settings`)
    await card().getByText('No passkeys yet.').waitFor()
    await card().getByLabel('Name for the new passkey').fill('Laptop')
    await card().getByRole('button', { name: 'Add a passkey' }).click()
    await card().getByText('Passkey "Laptop" added. You can now sign in with it.').waitFor()
    await card().getByRole('cell', { name: 'Laptop', exact: true }).waitFor()
    const creds = await cdp.send('WebAuthn.getCredentials', { authenticatorId })
    expect(creds.credentials).toHaveLength(1)
    expect(creds.credentials[0]!.isResidentCredential).toBe(true)
    expect(creds.credentials[0]!.rpId).toBe('localhost')

    await card().getByRole('button', { name: 'Rename passkey Laptop' }).click()
    await card().getByLabel('New name for Laptop').fill('Work laptop')
    await card().getByRole('button', { name: 'Save name' }).click()
    await card().getByText('Passkey renamed.').waitFor()
    await card().getByRole('cell', { name: 'Work laptop', exact: true }).waitFor()
    // Dates in words, never raw ISO: "never" until the first use.
    await card().getByRole('cell', { name: 'never' }).waitFor()
    expect(await axeProblemsInBothThemesAndWidths(page, 'settings, passkeys')).toEqual([])
    const audit = (await panel.db().execute("SELECT message FROM logs WHERE source = 'audit' AND message LIKE 'passkey_%' ORDER BY id"))
      .rows
    expect(audit.map((r) => r.message)).toEqual(['passkey_register', 'passkey_rename'])
  })

  it('signs in with the passkey alone, and the captured assertion cannot be replayed', async () => {
    await signOut()
    page.on('request', (r) => {
      if (r.url().endsWith('/api/auth/passkeys/login') && r.method() === 'POST') capturedAssertion = r.postData() ?? undefined
    })
    await page.goto(`${url}/login?rd=/logs`)
    await page.getByRole('button', { name: 'Use a passkey' }).click()
    await page.waitForURL(`${url}/logs`)
    await page.getByRole('heading', { name: 'Logs' }).waitFor()
    expect(capturedAssertion).toBeDefined()
    const replay = await panel.request('/api/auth/passkeys/login', {
      method: 'POST',
      rawBody: capturedAssertion,
      headers: { 'content-type': 'application/json' },
    })
    expect(replay.status).toBe(401)
    expect(sessionCookieOf(replay)).toBeUndefined()
    await page.goto(`${url}/settings`)
    await card().getByRole('cell', { name: 'never' }).waitFor({ state: 'detached' })
  })

  it('completes the second step with the passkey instead of the TOTP code, and recovery codes still work', async () => {
    // TOTP on for the admin (by API: the TOTP screen has its own tests); this ends the browser's session.
    const cookie = await panel.login()
    const setup = await panel.request('/api/auth/totp/setup', { method: 'POST', body: {}, cookie })
    registerTestSecret(setup.json.secret)
    const code = generateHOTP(decodeBase32IgnorePadding(setup.json.secret), BigInt(Math.floor(Date.now() / 30_000)), 6)
    const enabled = await panel.request('/api/auth/totp/enable', { method: 'POST', body: { code }, cookie })
    expect(enabled.status).toBe(200)
    const recovery: string[] = enabled.json.recovery_codes
    for (const c of recovery) registerTestSecret(c)

    await passwordStep()
    await page.getByRole('heading', { name: 'Two-factor code' }).waitFor()
    await page.getByRole('button', { name: 'Use a passkey instead' }).click()
    await page.waitForURL(`${url}/hosts`)
    const login = (await panel.db().execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'login' ORDER BY id DESC LIMIT 1"))
      .rows[0]!
    expect(String(login.raw)).toContain('"second_factor":"passkey"')

    await signOut()
    await passwordStep()
    await page.getByRole('heading', { name: 'Two-factor code' }).waitFor()
    await page.getByLabel('Authentication or recovery code').fill(recovery[0]!)
    await page.getByRole('button', { name: 'Verify' }).click()
    await page.waitForURL(`${url}/hosts`)
  })

  it('removes the passkey; it then no longer signs in', async () => {
    await page.goto(`${url}/settings`)
    page.once('dialog', (d) => d.accept())
    await card().getByRole('button', { name: 'Remove passkey Work laptop' }).click()
    await card().getByText('Passkey "Work laptop" removed.').waitFor()
    await card().getByText('No passkeys yet.').waitFor()
    expect(await axeProblemsInBothThemesAndWidths(page, 'settings, no passkeys')).toEqual([])
    await signOut()
    // The device still holds the key; the panel refuses it.
    await page.goto(`${url}/login?rd=/logs`)
    await page.getByRole('button', { name: 'Use a passkey' }).click()
    await page.getByRole('alert').filter({ hasText: 'passkey not accepted' }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/login')
    expect(
      (
        await panel.request('/api/auth/session', {
          cookie: `panel_session=${(await chrome.browser.cookies()).find((c) => c.name === 'panel_session')?.value ?? ''}`,
        })
      ).status,
    ).toBe(401)
    const removed = (await panel.db().execute("SELECT message FROM logs WHERE source = 'audit' AND message = 'passkey_delete'")).rows
    expect(removed).toHaveLength(1)
  })

  it('left no console errors', () => {
    // The refused passkey's 401 is the panel's answer, logged by the browser as a failed request.
    const refusal = /status of 401 .* @ http:\/\/localhost:\d+\/api\/auth\/passkeys\/login$/
    expect(consoleErrors.filter((e) => !refusal.test(e))).toEqual([])
  })
})
