import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { ADMIN } from '../support/panel'
import { httpRequest } from '../support/http'
import { startTestUpstream } from '../support/upstream'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, screenshot } from './browser'

// Issue 35 item 3 in Chromium against the production Caddy: "Undo this change" on the newest
// revision previews under its row (nothing saved), is confirmed there, and the proxy then
// serves the state before it; a second undo has nothing left to change and says why.

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const consoleErrors: string[] = []
const DOMAIN = 'app.ui-undo.example.test'
const ALIAS = 'www.ui-undo.example.test'

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
}, 90_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await up?.stop()
})

const through = (host: string) => httpRequest({ port: stack.httpPort, host, path: '/' })
const api = (path: string, opts: { method?: string; body?: unknown } = {}) => stack.panel.request(path, { ...opts, cookie: stack.admin })

describe('revisions as undo', () => {
  it('"Undo this change" on the newest revision previews next to its row, then the proxy serves the state before it', async () => {
    const group = await createGroup(stack, { name: 'ui-undo', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const host = (await createHost(stack, { domain: DOMAIN, target_group_id: group.id })).json
    const [before] = (await api('/api/revisions')).json
    const put = await api(`/api/hosts/${host.id}`, {
      method: 'PUT',
      body: { domain: DOMAIN, target_group_id: group.id, tls_mode: 'none', aliases: [ALIAS] },
    })
    expect(put.status, put.text).toBe(200)
    const [added] = (await api('/api/revisions')).json
    expect(added.id).toBe(before.id + 1)
    expect((await through(ALIAS)).status).toBe(200)
    const held = JSON.stringify(await stack.caddy.getConfig())

    await page.goto(`${stack.panel.url}/login?rd=/revisions`)
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`${stack.panel.url}/revisions`)
    const history = page.getByRole('region', { name: 'History' })
    await history.getByRole('cell', { name: `host ${DOMAIN} updated` }).waitFor()
    await history.getByRole('cell', { name: `Host ${DOMAIN} changed: Aliases` }).waitFor()
    // The oldest revision has no state before it: no undo there.
    const all = (await api('/api/revisions')).json as any[]
    await history.getByRole('button', { name: `Restore this version: revision ${all.at(-1).id}` }).waitFor()
    expect(await history.getByRole('button', { name: `Undo this change: revision ${all.at(-1).id}` }).count()).toBe(0)

    await history.getByRole('button', { name: `Undo this change: revision ${added.id}` }).click()
    const preview = page.getByRole('region', { name: `Preview of undoing revision ${added.id}` })
    await preview.getByText('(nothing saved yet)').waitFor()
    await preview.getByText(`Undoing would change: Host ${DOMAIN} changed (nothing saved yet).`).waitFor()
    await preview.getByText(`It brings back the state of revision ${before.id}.`).waitFor()
    const changes = preview.getByRole('region', { name: `What undoing revision ${added.id} would change` })
    await changes.getByRole('cell', { name: 'Aliases' }).waitFor()
    await changes.getByRole('cell', { name: ALIAS }).waitFor()
    // Next to its row (the row right after the revision's own), and focused so a screen reader reads it.
    const previewFollowsRow = await page.evaluate((id) => {
      const row = [...document.querySelectorAll('tr')].find((tr) => tr.firstElementChild?.textContent === String(id))
      return !!row?.nextElementSibling?.querySelector('section[aria-label^="Preview of undoing"]')
    }, added.id)
    expect(previewFollowsRow).toBe(true)
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe(`Preview of undoing revision ${added.id}`)
    // Nothing saved by the preview.
    expect((await api(`/api/hosts/${host.id}`)).json.aliases).toEqual([ALIAS])
    expect(JSON.stringify(await stack.caddy.getConfig())).toBe(held)
    await screenshot(page, 'revisions-undo-preview')
    expect(await axeProblemsInBothThemesAndWidths(page, 'revisions with an undo preview open')).toEqual([])

    await preview.getByRole('button', { name: `Undo revision ${added.id} now` }).click()
    await page.getByText(`Undid revision ${added.id}: the state of revision ${before.id} is back, now revision ${added.id + 1}.`).waitFor()
    expect((await through(ALIAS)).status).toBe(404)
    expect((await through(DOMAIN)).status).toBe(200)
    expect((await api(`/api/hosts/${host.id}`)).json.aliases).toEqual([])
    await history.getByRole('cell', { name: `Undo of revision ${added.id} (host ${DOMAIN} updated)` }).waitFor()
    // The compare selects follow the list: the new revision against the one before it.
    const [fromSelect, toSelect] = [0, 1].map((i) => page.getByRole('region', { name: 'Compare' }).getByRole('combobox').nth(i))
    await expect.poll(() => toSelect!.inputValue()).toBe(String(added.id + 1))
    await expect.poll(() => fromSelect!.inputValue()).toBe(String(added.id))

    // Undoing it again has nothing left to change, and says why.
    await history.getByRole('button', { name: `Undo this change: revision ${added.id}` }).click()
    await page
      .getByRole('region', { name: `Preview of undoing revision ${added.id}` })
      .getByText(`Nothing to undo: the current state already equals revision ${before.id}, the state before revision ${added.id}.`)
      .waitFor()
    await screenshot(page, 'revisions-undo-nothing')
    expect(consoleErrors).toEqual([])
  })
})
