import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { demoPanelEnv } from '../support/demo'
import { ADMIN } from '../support/panel'
import { freePort } from '../support/ports'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { firstPage, launchChromium } from './browser'

// Strict session mode (setting auth.strict_sessions, docs/auth.md) in Chromium, with the
// production Caddy: the panel on `localhost`, protected hosts on other sites (`*.localhost` is
// loopback to Chromium, and each name is a site of its own). The panel's SameSite=Strict session
// is not sent on a navigation that comes from a protected host; the exchange's start reloads
// itself once so that it is, instead of asking a signed-in operator to sign in again.

let stack: ProxyStack
let upstream: TestUpstream
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let panelPort: number
const consoleErrors: string[] = []
const APP = 'app.localhost'
const TWO = 'two.localhost'

beforeAll(async () => {
  upstream = await startTestUpstream()
  panelPort = await freePort()
  stack = await startProxyStack({ panelPort, env: demoPanelEnv(panelPort) })
  const group = await createGroup(stack, { name: 'strict', targets: [{ address: `127.0.0.1:${upstream.port}` }] })
  for (const domain of [APP, TWO])
    expect((await createHost(stack, { domain, target_group_id: group.id, auth_required: true })).status).toBe(201)
  const on = await stack.panel.request('/api/settings', { method: 'PUT', cookie: stack.admin, body: { 'auth.strict_sessions': true } })
  expect(on.status, on.text).toBe(200)
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
}, 120_000)

afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await upstream?.stop()
})

const upstreamAnswer = async () => JSON.parse((await page.locator('body').textContent()) ?? '')
const cookiesOf = async (url: string) => (await chrome.browser.cookies(url)).map((c) => c.name).sort()

describe('strict session mode in a browser', () => {
  it('a visitor to a protected host signs in on the panel and is back on the page asked for, through the code exchange', async () => {
    const panel = `http://localhost:${panelPort}`
    const asked = `http://${APP}:${stack.httpPort}/private/page?x=1`
    const before = upstream.requests.length
    await page.goto(asked)
    await page.waitForURL((u) => u.origin === panel && u.pathname === '/login')
    expect(upstream.requests.length).toBe(before)
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(asked)
    const answer = await upstreamAnswer()
    expect(answer.url).toBe('/private/page?x=1')
    expect(answer.headers['x-auth-email']).toBe(ADMIN.email)
    // Neither cookie reached the upstream, and each stays on its own host.
    expect(answer.headers.cookie ?? '').toBe('')
    expect(await cookiesOf(`http://${APP}:${stack.httpPort}/`)).toEqual(['panel_fa'])
    expect(await cookiesOf(`${panel}/`)).toEqual(['__Host-panel_session'])
  })

  it('a second protected host, reached from another site while signed in, needs no second sign-in', async () => {
    const asked = `http://${TWO}:${stack.httpPort}/second`
    // From a page of the first host, as a link would: the navigation comes from another site than the panel's.
    expect(new URL(page.url()).hostname).toBe(APP)
    await page.evaluate((url) => {
      location.href = url
    }, asked)
    await page.waitForURL(asked)
    const answer = await upstreamAnswer()
    expect(answer.url).toBe('/second')
    expect(answer.headers['x-auth-user']).toBe(ADMIN.email)
    expect(await cookiesOf(`http://${TWO}:${stack.httpPort}/`)).toEqual(['panel_fa'])
  })

  it('signing out of the panel closes the protected hosts', async () => {
    const panel = `http://localhost:${panelPort}`
    // The browser's own cookie jar, without loading a page of the panel.
    const out = await chrome.browser.request.post(`${panel}/api/auth/logout`)
    expect(out.status()).toBe(204)
    await page.goto(`http://${APP}:${stack.httpPort}/again`)
    await page.waitForURL((u) => u.origin === panel && u.pathname === '/login')
  })

  it('logged no console error', () => {
    expect(consoleErrors).toEqual([])
  })
})
