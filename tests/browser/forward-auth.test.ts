import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FORWARD_AUTH_PROBE_HOST } from '../../server/utils/proxy/build/forward-auth'
import type { BrowserContext, Page } from 'playwright-core'
import { createDemoHosts, DEMO_OPEN_HOST, DEMO_PROTECTED_HOST, demoPanelEnv } from '../support/demo'
import { ADMIN } from '../support/panel'
import { freePort } from '../support/ports'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { httpRequest } from '../support/http'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { firstPage, launchChromium } from './browser'

// ForwardAuth end to end in Chromium with the settings of the demo stack (npm run
// stack, tests/support/demo.ts): the built panel and the production Caddy. A visitor
// to the protected host goes to the panel's login page and back to the page asked
// for; the host form says where visitors go and asks the proxy whether it reaches
// the panel (the unreachable case: layout.test.ts, a panel whose PANEL_INTERNAL_URL
// has nothing behind it).

let stack: ProxyStack
let upstream: TestUpstream
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let panelPort: number
let hosts: Awaited<ReturnType<typeof createDemoHosts>>
const consoleErrors: string[] = []

beforeAll(async () => {
  upstream = await startTestUpstream()
  panelPort = await freePort()
  stack = await startProxyStack({ panelPort, env: demoPanelEnv(panelPort) })
  hosts = await createDemoHosts(stack.panel, stack.admin, upstream.port)
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
}, 120_000)

afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await upstream?.stop()
})

const upstreamAnswer = async () => JSON.parse((await page.locator('body').textContent()) ?? '')

describe('ForwardAuth with the demo stack settings', () => {
  it('a visitor to the protected host signs in on the panel login page and is back on the page asked for', async () => {
    const publicUrl = `http://localhost:${panelPort}`
    const asked = `http://${DEMO_PROTECTED_HOST}:${stack.httpPort}/private/page?x=1`
    const before = upstream.requests.length
    await page.goto(asked)
    await page.waitForURL((u) => u.origin === publicUrl && u.pathname === '/login')
    expect(new URL(page.url()).searchParams.get('rd')).toBe(asked)
    expect(upstream.requests.length).toBe(before) // the upstream saw nothing before the login
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(asked)
    const answer = await upstreamAnswer()
    expect(answer.url).toBe('/private/page?x=1')
    expect(answer.headers['x-auth-email']).toBe(ADMIN.email) // the proxy passed the panel's identity on
    // The open demo host needs no login.
    await page.goto(`http://${DEMO_OPEN_HOST}:${stack.httpPort}/open`)
    expect((await upstreamAnswer()).url).toBe('/open')
  })

  it('the host form names the login page and the check says the proxy reaches the panel', async () => {
    const publicUrl = `http://localhost:${panelPort}`
    await page.goto(`${publicUrl}/hosts/${hosts[DEMO_PROTECTED_HOST]!.id}`)
    await page.getByRole('heading', { level: 1, name: DEMO_PROTECTED_HOST }).waitFor()
    expect(await page.getByTestId('forward-auth-help').textContent()).toMatch(
      new RegExp(`^ForwardAuth: a visitor who is not signed in to the panel is sent to http://localhost:${panelPort}/login, and back`),
    )
    await page.getByRole('button', { name: 'Check that the proxy reaches the panel' }).click()
    const status = page.getByRole('status').filter({ hasText: /^Reachable: / })
    await status.waitFor()
    expect(await status.textContent()).toBe(
      `Reachable: the proxy reached the panel at 127.0.0.1:${panelPort} (PANEL_INTERNAL_URL) and got its answer: a visitor who is not signed in is sent to ${publicUrl}/login.`,
    )
    // The same through the API: the probe went through the proxy's plain listener and changed nothing.
    const revisions = (await stack.panel.request('/api/revisions', { cookie: stack.admin })).json
    const check = await stack.panel.request('/api/system/forward-auth-check', { cookie: stack.admin })
    expect(check.status).toBe(200)
    expect(check.json).toMatchObject({
      state: 'reachable',
      panel_address: `127.0.0.1:${panelPort}`,
      proxy_address: `http://127.0.0.1:${stack.httpPort}`,
      proxy_status: 302,
    })
    expect((await stack.panel.request('/api/revisions', { cookie: stack.admin })).json).toEqual(revisions)
    // The probe is not a visitor: the proxy's access log has the protected host's requests, never the probe's.
    const logged = () =>
      readdirSync(stack.logDir)
        .map((f) => readFileSync(join(stack.logDir, f), 'utf8'))
        .join('')
    await expect.poll(() => logged().includes(`"host":"${DEMO_PROTECTED_HOST}`), { timeout: 10_000 }).toBe(true)
    expect(logged()).not.toContain(FORWARD_AUTH_PROBE_HOST)
  })

  it('the dashboard says so when the panel is reached through the proxy while PANEL_TRUSTED_PROXIES is empty (issue 33)', async () => {
    const publicUrl = `http://localhost:${panelPort}`
    const item = page.locator('ul.health li', { hasText: 'Visitor addresses' })
    await page.goto(`${publicUrl}/`)
    await item.waitFor()
    // So far the panel was reached directly (the proxy's ForwardAuth checks are not visitors).
    expect((await item.textContent())?.replace(/\s+/g, ' ')).toMatch(/^OK Visitor addresses the connection address/)
    // The panel behind the proxy, as deployment step 5 serves it, and one request through it.
    const group = await createGroup(stack, { name: 'panel', targets: [{ address: `127.0.0.1:${panelPort}` }] })
    expect((await createHost(stack, { domain: 'panel.demo.localhost', target_group_id: group.id })).status).toBe(201)
    expect((await httpRequest({ port: stack.httpPort, host: 'panel.demo.localhost', path: '/api/auth/session' })).status).toBe(401)
    await page.reload()
    await item.waitFor()
    expect((await item.textContent())?.replace(/\s+/g, ' ')).toMatch(
      /^Problem Visitor addresses requests reach the panel through a proxy at 127\.0\.0\.1 .*Set PANEL_TRUSTED_PROXIES=127\.0\.0\.1 /,
    )
  })

  it('logged no console error', () => {
    expect(consoleErrors).toEqual([])
  })
})
