import { readFileSync } from 'node:fs'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { BrowserContext, Page, Response } from 'playwright-core'
import { buildNpmDatabase } from '../support/npm-db'
import { ADMIN, startPanel, type PanelHandle } from '../support/panel'
import { freePort } from '../support/ports'
import { firstPage, launchChromium, signInAsAdmin } from './browser'

// Issue 33, item 1 (security review, finding 1, reproduced in Chromium): an admin
// signed in at panel.example.test opens a page of a sibling, app.example.test.
// Same site, so the browser attaches the Lax session cookie (Domain example.test)
// to that page's requests. Each request a page may send without a CORS preflight
// is tried; the panel must refuse them all and nothing may change. Every name
// under example.test resolves to loopback in this Chromium only.

const DOMAIN = 'panel.example.test'
const FORGED_ADMIN = { email: 'csrf-browser@example.test', password: 'Csrf-Browser-Passw0rd', role: 'admin' }

let panel: PanelHandle
let own: string
let sibling: string
let echo: string
let server: Server
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let victimId: number
let npmDbBase64: string
const consoleErrors: string[] = []

/** The sibling's pages: a blank page its scripts run in, and a page framing the panel. */
function siblingPage(url: string): string {
  if (url.startsWith('/frame')) return `<!DOCTYPE html><title>frame</title><iframe id="panel" src="${own}/"></iframe>`
  return '<!DOCTYPE html><title>app</title><p>an app next to the panel</p>'
}

/** What could change: users, sessions, hosts, settings and the audit rows. */
async function snapshot() {
  const db = panel.db()
  const rows = async (sql: string) => (await db.execute(sql)).rows
  return JSON.stringify([
    await rows('SELECT id, email, role FROM users ORDER BY id'),
    await rows('SELECT id FROM sessions ORDER BY id'),
    await rows('SELECT id, domain FROM hosts ORDER BY id'),
    await rows('SELECT key, value FROM settings ORDER BY key'),
    await rows("SELECT count(*) AS n FROM logs WHERE source = 'audit'"),
  ])
}

let echoed: ((headers: IncomingHttpHeaders) => void) | null = null

/**
 * Runs `attack` from the sibling page against `path`: first at echo.example.test (another
 * name under the cookie's domain, served by the sibling's server), which shows that the
 * browser attaches the admin's session to exactly this request, then at the panel.
 * Returns the panel's answer.
 */
async function panelAnswerTo(
  path: string,
  attack: (url: string) => Promise<unknown>,
  opts: { navigates?: boolean } = {},
): Promise<Response> {
  // A form submission navigates the page: wait for that navigation before the next one.
  const landed = (url: string) => (opts.navigates ? page.waitForURL(url) : Promise.resolve())
  const control = new Promise<IncomingHttpHeaders>((resolve) => {
    echoed = resolve
  })
  await Promise.all([landed(`${echo}${path}`), attack(`${echo}${path}`)])
  expect((await control).cookie ?? '').toContain('panel_session=')
  await page.goto(`${sibling}/`)
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url() === `${own}${path}` && r.request().method() === 'POST'),
    landed(`${own}${path}`),
    attack(`${own}${path}`),
  ])
  return response
}

beforeAll(async () => {
  const port = await freePort()
  own = `http://${DOMAIN}:${port}`
  panel = await startPanel({ port, env: { PANEL_DOMAIN: DOMAIN, PANEL_PUBLIC_URL: own } })
  const victim = await panel.request('/api/users', {
    method: 'POST',
    cookie: await panel.login(),
    body: { email: 'victim@example.test', password: 'victim-password-123', role: 'viewer' },
  })
  expect(victim.status).toBe(201)
  victimId = victim.json.id
  const file = await buildNpmDatabase({
    user: [{ is_deleted: 0, email: 'admin@example.test', name: 'Admin', nickname: 'admin', avatar: '', roles: ['admin'] }],
    proxy_host: [
      { is_deleted: 0, owner_user_id: 1, meta: {}, domain_names: ['csrf-form.example.test'], forward_host: '127.0.0.1', forward_port: 9 },
    ],
  })
  npmDbBase64 = readFileSync(file).toString('base64')
  const siblingPort = await freePort()
  sibling = `http://app.example.test:${siblingPort}`
  echo = `http://echo.example.test:${siblingPort}`
  server = createServer((req, res) => {
    if (req.method === 'POST') {
      // The control name: what the browser attached to the attack's request, the body left unread.
      echoed?.(req.headers)
      echoed = null
      req.resume()
    }
    res.setHeader('content-type', 'text/html; charset=utf-8')
    res.end(siblingPage(req.url ?? '/'))
  })
  await new Promise<void>((resolve) => server.listen(siblingPort, '127.0.0.1', resolve))
  chrome = await launchChromium(['--host-resolver-rules=MAP *.example.test 127.0.0.1'])
  page = await firstPage(chrome, consoleErrors)
  // The admin signs in through the panel's own UI, at its own name: the origin rule lets its pages through.
  await signInAsAdmin(page, own)
  const cookie = (await chrome.browser.cookies()).find((c) => c.name === 'panel_session')!
  // The parent domain: every name under example.test gets it, the sibling's included.
  expect(cookie.domain.replace(/^\./, '')).toBe('example.test')
}, 120_000)
beforeEach(async () => {
  await page.goto(`${sibling}/`)
})
afterAll(async () => {
  await chrome?.close()
  await new Promise((resolve) => server?.close(resolve))
  await panel?.stop()
})

/** The sibling page POSTs `body` as JSON labelled `text/plain; charset=application/json` (a type that needs no preflight). */
function postTextPlainFromSibling(path: string, body: unknown) {
  return panelAnswerTo(path, (url) =>
    page.evaluate(
      ([url, body]) =>
        fetch(url, {
          method: 'POST',
          mode: 'no-cors',
          credentials: 'include',
          headers: { 'content-type': 'text/plain; charset=application/json' },
          body,
        }),
      [url, JSON.stringify(body)] as const,
    ),
  )
}

describe('a page on a sibling name cannot drive the panel', () => {
  it('text/plain; charset=application/json (no preflight): refused, no user created', async () => {
    const before = await snapshot()
    const answer = await postTextPlainFromSibling('/api/users', FORGED_ADMIN)
    expect(answer.status()).toBe(403)
    expect(await snapshot()).toBe(before)
  })

  it('a Blob without a type (no Content-Type at all): refused, no user created', async () => {
    const before = await snapshot()
    const answer = await panelAnswerTo('/api/users', (url) =>
      page.evaluate(([url, body]) => fetch(url, { method: 'POST', mode: 'no-cors', credentials: 'include', body: new Blob([body]) }), [
        url,
        JSON.stringify({ ...FORGED_ADMIN, email: 'csrf-browser-blob@example.test' }),
      ] as const),
    )
    expect(answer.status()).toBe(403)
    expect(await snapshot()).toBe(before)
  })

  it('login CSRF with a text/plain body: refused, no session created', async () => {
    const before = await snapshot()
    const answer = await postTextPlainFromSibling('/api/auth/login', { email: ADMIN.email, password: ADMIN.password })
    expect(answer.status()).toBe(403)
    expect(await snapshot()).toBe(before)
  })

  it('a plain HTML multipart form posting an nginx-proxy-manager database: refused, nothing imported', async () => {
    const before = await snapshot()
    const answer = await panelAnswerTo(
      '/api/import/npm',
      (url) =>
        page.evaluate(
          ([action, base64]) => {
            const form = document.createElement('form')
            form.method = 'POST'
            form.enctype = 'multipart/form-data'
            form.action = action
            const file = document.createElement('input')
            file.type = 'file'
            file.name = 'database'
            const files = new DataTransfer()
            files.items.add(new File([Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))], 'database.sqlite'))
            file.files = files.files
            const apply = document.createElement('input')
            apply.name = 'apply'
            apply.value = 'true'
            form.append(file, apply)
            document.body.append(form)
            form.submit()
          },
          [url, npmDbBase64] as const,
        ),
      { navigates: true },
    )
    expect(answer.status()).toBe(403)
    expect(await snapshot()).toBe(before)
  })

  it('a DELETE (needs a preflight the panel never grants): the user stays', async () => {
    const before = await snapshot()
    const outcome = await page.evaluate(
      (url) =>
        fetch(url, { method: 'DELETE', credentials: 'include' }).then(
          () => 'sent',
          (e: Error) => `failed: ${e.name}`,
        ),
      `${own}/api/users/${victimId}`,
    )
    expect(outcome).toBe('failed: TypeError')
    expect(await snapshot()).toBe(before)
  })

  it("cannot frame the panel's UI (frame-ancestors 'none')", async () => {
    await page.goto(`${sibling}/frame`)
    const frame = await (await page.locator('#panel').elementHandle())!.contentFrame()
    // Chromium replaces a refused frame with its own error page.
    await frame!.waitForLoadState()
    expect(frame!.url()).toMatch(/^chrome-error:/)
    expect(await page.evaluate(() => document.title)).toBe('frame')
  })

  it('after all of that, the panel lists no forged user and the same hosts', async () => {
    const cookie = await panel.login()
    const users = (await panel.request('/api/users', { cookie })).json.map((u: any) => u.email)
    expect(users).toContain('victim@example.test')
    expect(users).not.toContain(FORGED_ADMIN.email)
    expect(users).not.toContain('csrf-browser-blob@example.test')
    expect((await panel.request('/api/hosts', { cookie })).json).toEqual([])
  })
})
