import { connect, createServer, type Server } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { consecutiveFreePorts } from '../support/ports'
import { createGroup, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, signInAsAdmin } from './browser'

// The Streams screen in a real Chromium against the built panel and the production
// Caddy (docs/ui.md, docs/streams.md): create through the form, the list with its
// ports to publish, edit, a conflict shown at the port field, delete; axe on both.

let stack: ProxyStack
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let port: number
let echo: Server
let groupLabel: string
let echoPort: number
const consoleErrors: string[] = []

beforeAll(async () => {
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  // The range edit below listens on port..port+2: all three checked free, not only the first.
  port = await consecutiveFreePorts(3)
  // The upstream: a TCP echo server (not the thing under test).
  echo = createServer((socket) => socket.pipe(socket))
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
  echoPort = (echo.address() as { port: number }).port
  groupLabel = `ssh servers (127.0.0.1:${echoPort})`
  // A health check on the group: the stream's opt-in to live target health (docs/streams.md).
  await createGroup(stack, {
    name: 'ssh servers',
    targets: [{ address: `127.0.0.1:${echoPort}` }],
    health_check: { path: '/healthz', interval_seconds: 10, expect_status: 200 },
  })
  await stack.panel.request('/api/access-lists', {
    method: 'POST',
    cookie: stack.admin,
    body: { name: 'office', realm: 'office', default_action: 'deny', ip_rules: [{ action: 'allow', source: '127.0.0.1' }], users: [] },
  })
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  page.on('dialog', (d) => d.accept())
  await signInAsAdmin(page, stack.panel.url)
}, 120_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await new Promise((resolve) => echo?.close(resolve))
})

const expectVisible = (l: Locator) => l.waitFor({ state: 'visible' })
const row = (name: string) => page.locator('tbody tr').filter({ has: page.locator('td', { hasText: new RegExp(`^${name}$`) }) })
/** Sends a line through the stream's port on loopback and resolves with what came back. */
const echoThrough = (p: number, text: string) =>
  new Promise<string>((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: p }, () => socket.end(text))
    let got = ''
    socket.on('data', (d) => {
      got += d
    })
    socket.on('end', () => resolve(got))
    socket.on('error', reject)
  })
const streamsInApi = async () => (await stack.panel.request('/api/streams', { cookie: stack.admin })).json as any[]

describe('the Streams screen', () => {
  it('a TCP stream made through the form is listed with its ports to publish and its target group', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Streams' }).click()
    await page.getByRole('heading', { level: 1, name: 'Streams' }).waitFor()
    await expectVisible(page.getByText('No streams yet.'))
    await page.getByRole('button', { name: 'Add stream' }).click()
    await page.getByLabel('Stream name').fill('ssh')
    await page.getByLabel(/^Protocol/).selectOption({ label: 'TCP' })
    await page.getByLabel('Listen port').fill(String(port))
    await page.getByLabel('Target group').selectOption({ label: groupLabel })
    expect(await axeProblemsInBothThemesAndWidths(page, 'stream form, new')).toEqual([])
    await page.getByRole('button', { name: 'Save stream' }).click()
    await expectVisible(page.getByText(/^Stream ssh saved\./))
    const [made] = await streamsInApi()
    expect(made).toMatchObject({ name: 'ssh', protocol: 'tcp', listen_port: port, listen_port_end: null, enabled: true })
    await expectVisible(row('ssh').getByTestId('ports-to-publish').getByText(`${port}/tcp`))
    await expectVisible(row('ssh').getByRole('link', { name: 'ssh servers' }))
    await expectVisible(row('ssh').getByText('bans refused'))
    // Live health of the target (GET /api/streams/health): the echo upstream accepts connections.
    await expectVisible(row('ssh').locator(`[data-target="127.0.0.1:${echoPort}"]`).getByText('Healthy'))
    await expectVisible(page.getByTestId('ports-to-publish-help'))
    // The proxy took the stream: bytes sent to its port come back from the echo upstream.
    expect(await echoThrough(port, 'hello through the stream')).toBe('hello through the stream')
    expect(await axeProblemsInBothThemesAndWidths(page, 'streams list')).toEqual([])
  })

  it('edit: a range mapped port to port, LAN only and an access list; the list says so in words', async () => {
    await page.getByRole('button', { name: 'Edit stream ssh' }).click()
    await page.getByLabel('to port (for a range; empty for one port)').fill(String(port + 2))
    await page.getByLabel('How the range reaches the targets').selectOption('one_to_one')
    await page.getByLabel('LAN only (connections from public addresses are closed)').check()
    await page.getByLabel('Access list').selectOption({ label: 'office' })
    // A range has no server names: the SNI part is not offered.
    expect(await page.getByRole('group', { name: 'Server names (TLS SNI)' }).count()).toBe(0)
    // The preview (a dry run) lists the change in words and saves nothing.
    await page.getByRole('button', { name: 'Preview changes' }).click()
    await expectVisible(page.getByText('Preview: saving would change the proxy configuration as listed below. Nothing was saved.'))
    const changes = page.getByRole('region', { name: 'Changes the save would make' })
    await expectVisible(changes.locator('tr').filter({ hasText: 'Last port of the range' }).getByText('Stream ssh'))
    expect((await streamsInApi())[0].listen_port_end).toBeNull()
    expect(await axeProblemsInBothThemesAndWidths(page, 'stream form, range')).toEqual([])
    await page.getByRole('button', { name: 'Save stream' }).click()
    await expectVisible(page.getByText(/^Stream ssh saved\./))
    const [saved] = await streamsInApi()
    expect(saved).toMatchObject({ listen_port: port, listen_port_end: port + 2, range_mapping: 'one_to_one', lan_only: true })
    await expectVisible(row('ssh').getByText(`${port} to ${port + 2} (each to its own port)`))
    await expectVisible(row('ssh').getByText('LAN only, access list office, bans refused'))
    await expectVisible(
      row('ssh')
        .getByTestId('ports-to-publish')
        .getByText(`${port}-${port + 2}/tcp`),
    )
  })

  it('the revisions list names the change in words: the stream by name, its fields by the form words', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Revisions' }).click()
    await page.getByRole('heading', { level: 1, name: 'Revisions' }).waitFor()
    const newest = page.locator('tbody tr').filter({ hasText: 'stream ssh updated' }).first()
    await expectVisible(newest.getByText(/Stream ssh changed: .*Last port of the range/))
    expect(await newest.textContent()).toContain('LAN only')
    expect(await newest.textContent()).not.toMatch(/listen_port|lan_only/)
    await page.getByRole('navigation').getByRole('link', { name: 'Streams' }).click()
    await page.getByRole('heading', { level: 1, name: 'Streams' }).waitFor()
  })

  it("a port the proxy's HTTPS listener holds (no server names) is refused at the Listen port field; nothing is made", async () => {
    await page.getByRole('button', { name: 'Add stream' }).click()
    await page.getByLabel('Stream name').fill('clash')
    await page.getByLabel('Listen port').fill(String(stack.httpsPort))
    await page.getByLabel('Target group').selectOption({ label: groupLabel })
    await page.getByRole('button', { name: 'Save stream' }).click()
    const port443 = page.getByLabel('Listen port')
    await expect.poll(() => port443.getAttribute('aria-invalid')).toBe('true')
    const errorId = (await port443.getAttribute('aria-describedby'))!
    const error = page.locator(`[id="${errorId}"]`)
    expect(await error.textContent()).toMatch(/^Listen port: .*HTTPS/)
    // The error sits in the port's own field, not in a banner at the top.
    expect(await page.locator('.field').filter({ has: port443 }).locator('.field-error').count()).toBe(1)
    expect(await axeProblemsInBothThemesAndWidths(page, 'stream form, refused port')).toEqual([])
    expect((await streamsInApi()).map((s) => s.name)).toEqual(['ssh'])
    await page.getByRole('button', { name: 'Cancel' }).click()
  })

  it('delete asks, then the stream is gone from the list and the API', async () => {
    await page.getByRole('button', { name: 'Delete stream ssh' }).click()
    await expectVisible(page.getByText('Stream ssh deleted.'))
    await expectVisible(page.getByText('No streams yet.'))
    expect(await streamsInApi()).toEqual([])
    // The refused save above is the one request that failed (the browser logs its 409).
    expect(consoleErrors.filter((e) => !/status of 409/.test(e))).toEqual([])
  })
})
