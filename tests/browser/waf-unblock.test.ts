import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { eventually } from '../support/http'
import { createPublicClientNamespace, type PublicClientNamespace } from '../support/netns'
import { ADMIN } from '../support/panel'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, screenshot } from './browser'

// Exclusions that unblock, from the screens: a request refused by the sum of several CRS
// rules shows every rule with its points against the threshold on its Logs row; the row
// offers the set that unblocks it with a preview over the stored rows; applying it lets
// the very request through the production Caddy (Coraza, full CRS) on that path only.

const HOST = 'shop.example.test'
const HOST_ADDRESS = '198.51.100.1'
const CLIENT = '198.51.100.51'
const ATTACK = "q=1'%20UNION%20SELECT%20password%20FROM%20users--"

let stack: ProxyStack
let up: TestUpstream
let ns: PublicClientNamespace
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let hostId: number
const consoleErrors: string[] = []

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: HOST_ADDRESS, clientAddresses: [CLIENT] })
  stack = await startProxyStack({ httpListenExtra: [HOST_ADDRESS], env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const res = await createHost(stack, {
    domain: HOST,
    target_group_id: group.id,
    bouncer_enabled: false,
    waf_enabled: true,
    waf_mode: 'blocking',
    waf_profile: 'full',
  })
  expect(res.status, res.text).toBe(201)
  hostId = res.json.id
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
}, 120_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

const expectVisible = (l: Locator) => l.waitFor({ state: 'visible' })
const send = async (path: string) =>
  (await ns.curl(`http://${HOST_ADDRESS}:${stack.httpPort}${path}`, ['-H', `Host: ${HOST}`], { fromAddress: CLIENT })).status
const tagOf = (p: unknown) => (typeof p === 'string' ? new URL(p, 'http://x').searchParams.get('t') : null)

describe('exclusions that unblock, from the Logs row', () => {
  it('lists every matched rule against the threshold, offers the set with its preview, and the same request then passes', async () => {
    expect(await send(`/search?${ATTACK}&t=ui-1`)).toBe(403)
    expect(await send(`/search?${ATTACK}&t=ui-2`)).toBe(403)
    const rows = await eventually(
      async () => (await stack.panel.request(`/api/logs?source=waf_audit&host_id=${hostId}`, { cookie: stack.admin })).json as any[],
      (r) => ['ui-1', 'ui-2'].every((t) => r.some((x) => tagOf(x.path) === t)),
      15_000,
      200,
    )
    const row = rows.find((x) => tagOf(x.path) === 'ui-1')
    const scoring = (row.waf_rules as any[]).filter((r) => r.score > 0)
    expect(scoring.length).toBeGreaterThanOrEqual(3)
    const ids = scoring.map((r) => r.id).sort((a: number, b: number) => a - b)

    await page.goto(`${stack.panel.url}/login`)
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL((u) => !u.pathname.startsWith('/login'))
    await page.goto(`${stack.panel.url}/logs?source=waf_audit`)
    await page.getByRole('row', { name: `Log row ${row.id}` }).click()

    const verdict = page.getByRole('region', { name: 'WAF verdict' })
    await expectVisible(verdict.getByText(`Score ${row.waf_anomaly_score}, blocking threshold 5`))
    const table = verdict.getByRole('table', { name: 'Rules this request matched' })
    for (const r of scoring) {
      const line = table.getByRole('row').filter({ has: page.getByRole('cell', { name: String(r.id), exact: true }) })
      await expect(line.getByRole('cell').nth(1).textContent()).resolves.toBe(r.severity.charAt(0) + r.severity.slice(1).toLowerCase())
      await expect(line.getByRole('cell').nth(2).textContent()).resolves.toBe(String(r.score))
    }
    const onPath = verdict.getByRole('group', { name: 'Exclusions on /search' })
    await expectVisible(onPath.getByText(`These ${ids.length} rules, excluded on /search, bring this request under the threshold:`))
    // Why each: all but the last leave the score at or over the threshold.
    const steps = await onPath.getByRole('listitem').allTextContents()
    expect(steps).toHaveLength(ids.length)
    expect(steps.slice(0, -1).every((s) => /still \d+, at or over 5\.$/.test(s))).toBe(true)
    expect(steps.at(-1)).toMatch(/under 5, so the request passes\.$/)
    await expectVisible(onPath.getByText('This would have let 2 of the last 2 blocked requests on this host through.'))
    const onHost = verdict.getByRole('group', { name: 'Exclusions on the whole host' })
    await expectVisible(onHost.getByRole('button', { name: 'Exclude them on the whole host' }))
    await screenshot(page, 'waf-unblock-offer')
    expect(await axeProblemsInBothThemesAndWidths(page, 'Logs, WAF row open')).toEqual([])

    // The offered set, highest score first, is one click: one revision, the same request passes.
    const offered = (await stack.panel.request(`/api/logs/${row.id}/waf-unblock`, { cookie: stack.admin })).json.offers.path.rule_ids
    await onPath.getByRole('button', { name: `Exclude rules ${offered.join(', ')} on /search` }).click()
    await expectVisible(
      verdict.getByRole('status').filter({ hasText: `Rules ${offered.join(', ')} no longer apply to ${HOST} under /search` }),
    )
    await expectVisible(onPath.getByText(/The rules it needs are already excluded on \/search .*: the same request now passes there\./))
    expect(await send(`/search?${ATTACK}&t=ui-3`)).toBe(200)
    expect(up.requests.some((r) => tagOf(r.url) === 'ui-3')).toBe(true)
    expect(await send(`/other?${ATTACK}&t=ui-4`)).toBe(403)
  })

  it("the host's WAF section lists the set", async () => {
    await page.goto(`${stack.panel.url}/hosts/${hostId}`)
    const section = page.getByRole('region', { name: 'WAF rule exclusions' })
    await expectVisible(section.getByRole('cell', { name: 'path /search, every argument' }).first())
    await expect(section.getByRole('cell', { name: 'path /search, every argument' }).count()).resolves.toBeGreaterThanOrEqual(3)
    expect(await axeProblemsInBothThemesAndWidths(page, "the host's WAF section")).toEqual([])
    expect(consoleErrors).toEqual([])
  })
})
