import { connect, createServer, type Server } from 'node:net'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { freePort } from '../support/ports'
import { createGroup, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, signInAsAdmin } from './browser'

// Stream connections on the screens that count and list them (docs/streams.md "Connection
// rows"), against the built panel and the production Caddy: a real connection through a
// stream is counted on the dashboard and listed in the logs as "Stream connection".

let stack: ProxyStack
let echo: Server
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const consoleErrors: string[] = []
let listen: number

beforeAll(async () => {
  echo = createServer((s) => {
    s.on('error', () => {})
    s.on('data', (d) => s.write(d))
  })
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', () => resolve()))
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  const group = await createGroup(stack, { name: 'echo', targets: [{ address: `127.0.0.1:${(echo.address() as { port: number }).port}` }] })
  listen = await freePort()
  const res = await stack.panel.request('/api/streams', {
    method: 'POST',
    cookie: stack.admin,
    body: { name: 'game server', protocol: 'tcp', listen_port: listen, target_group_id: group.id },
  })
  expect(res.status, res.text).toBe(201)
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  await signInAsAdmin(page, stack.panel.url)
}, 120_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await new Promise<void>((resolve) => (echo ? echo.close(() => resolve()) : resolve()))
})

/** One connection through the stream: "ping\n" there and back, then closed. */
function connectOnce(): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port: listen })
    let out = ''
    s.on('connect', () => s.write('ping\n'))
    s.on('data', (d) => {
      out += d
      if (out.endsWith('\n')) s.end()
    })
    s.on('close', () => resolve(out))
    s.on('error', reject)
  })
}

describe('stream connections on the screens', () => {
  it('the dashboard counts them and the logs list them in words; axe-clean', async () => {
    expect(await connectOnce()).toBe('ping\n')
    await eventually(
      async () => (await stack.panel.request('/api/logs?source=layer4', { cookie: stack.admin })).json as any[],
      (r) => r.length === 1,
      15_000,
      200,
    )

    await page.goto(`${stack.panel.url}/`)
    await page.getByText('Stream connections, 24 h: 1 (0 refused)').waitFor({ state: 'visible' })
    expect(await axeProblemsInBothThemesAndWidths(page, 'Dashboard with stream connections')).toEqual([])

    await page.goto(`${stack.panel.url}/logs?source=layer4`)
    const rows = page.getByRole('table', { name: 'Log rows' }).locator('tbody tr')
    await rows.first().waitFor({ state: 'visible' })
    expect(await rows.count()).toBe(1)
    await expect(rows.first().textContent()).resolves.toContain('Stream connection')
    await page.getByRole('group', { name: 'Sources' }).getByLabel('Stream connection', { exact: true }).waitFor({ state: 'visible' })
    expect(await axeProblemsInBothThemesAndWidths(page, 'Logs of stream connections')).toEqual([])

    // The row's detail names the stream, the upstream and the bytes each way in words.
    await rows.first().click()
    const drawer = page.getByRole('dialog')
    await drawer.getByText('Bytes from the client').waitFor({ state: 'visible' })
    const list = drawer.locator('dl').first()
    const names = await list.locator('dt').allTextContents()
    const values = await list.locator('dd').allTextContents()
    const details = Object.fromEntries(names.map((n, i) => [n, values[i]]))
    expect(details).toMatchObject({
      Stream: 'game server',
      Upstream: `127.0.0.1:${(echo.address() as { port: number }).port}`,
      'Bytes from the client': '5 B',
      'Bytes to the client': '5 B',
    })
    expect(consoleErrors).toEqual([])
  })
})
