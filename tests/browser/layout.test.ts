import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { decisionsFor, panelEnvFor, postDecisions, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { eventually, httpRequest } from '../support/http'
import { ADMIN, registerTestSecret } from '../support/panel'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { createTestPki } from '../support/certs'
import { writeMmdb } from '../support/mmdb-writer'
import { Cron } from 'croner'
import { freePort, unusedPort } from '../support/ports'
import { axeProblems as axeProblemsOn, DESK, firstPage, launchChromium, PHONE, screenshot } from './browser'

// Phone and desk: the menu button, tables as cards, no sideways scrolling at 390 px,
// dark mode (system and toggle), column sorting, the unsaved-edits guard, the
// confirmation before disabling a host, the API reference link, and axe on every
// main screen in both themes and both widths. One stack for the whole file: the
// built panel, the production Caddy and the real CrowdSec engine.

const DOMAINS = ['bravo.example.test', 'alpha.example.test', 'charlie.example.test']

let cs: CrowdsecHandle
let stack: ProxyStack
let upstream: TestUpstream
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let base: string
const hostIds: Record<string, number> = {}
const consoleErrors: string[] = []

const through = (path: string, host: string) => httpRequest({ port: stack.httpPort, host, path })
const api = async (path: string, opts: Parameters<ProxyStack['panel']['request']>[1] = {}) =>
  stack.panel.request(path, { cookie: stack.admin, ...opts })

beforeAll(async () => {
  cs = await startCrowdsec()
  registerTestSecret(cs.machinePassword, cs.bouncerKey)
  // Decisions whose values sort differently from their insertion order.
  await postDecisions(cs, [
    { value: '203.0.113.20', duration: '2h' },
    { value: '203.0.113.9', duration: '3h' },
    { value: '203.0.113.100', duration: '1h' },
  ])
  upstream = await startTestUpstream()
  stack = await startProxyStack({ env: { ...panelEnvFor(cs), PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  base = stack.panel.url
  const group = await createGroup(stack, { name: 'web', targets: [{ address: `127.0.0.1:${upstream.port}` }] })
  for (const domain of DOMAINS) {
    const res = await createHost(stack, { domain, target_group_id: group.id })
    expect(res.status).toBe(201)
    hostIds[domain] = res.json.id
  }
  // A stream, so the Streams screen has a row (its target, ports and protection) to fit in 390 px.
  expect(
    (
      await api('/api/streams', {
        method: 'POST',
        body: { name: 'game server', protocol: 'tcp', listen_port: await freePort(), target_group_id: group.id, lan_only: true },
      })
    ).status,
  ).toBe(201)
  // Two uploaded certificates with different lifetimes, so the certificates screen has rows to sort.
  const pki = createTestPki()
  for (const [domain, days] of [
    ['bravo.example.test', 90],
    ['alpha.example.test', 10],
  ] as const) {
    const leaf = pki.leaf(domain, { sans: [domain], days })
    registerTestSecret(leaf.keyPem)
    const form = new FormData()
    form.append('cert_pem', leaf.certPem)
    form.append('key_pem', leaf.keyPem)
    expect((await api(`/api/manual-certs/${hostIds[domain]}`, { method: 'POST', form })).status).toBe(201)
  }
  // Log rows of three statuses: 200, a rule's 418 and 404 from the upstream.
  expect(
    (
      await api(`/api/hosts/${hostIds['charlie.example.test']}/rules`, {
        method: 'POST',
        body: { path: '/teapot*', action: 'respond', respond_status: 418, respond_body: 'tea' },
      })
    ).status,
  ).toBe(201)
  await through('/ok', 'charlie.example.test')
  await through('/teapot', 'charlie.example.test')
  await eventually(
    async () => (await api('/api/logs', { headers: {} })).json as any[],
    (rows) => rows.some((r) => r.status === 418),
    20_000,
    300,
  )
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
}, 180_000)

afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await upstream?.stop()
  await cs?.stop()
})

// Every main screen, with what shows once its data has loaded.
const SCREENS: Array<{ path: () => string; heading: string | RegExp; shot?: string }> = [
  { path: () => '/', heading: 'Dashboard', shot: 'dashboard' },
  { path: () => '/hosts', heading: 'Hosts', shot: 'hosts' },
  { path: () => `/hosts/${hostIds['alpha.example.test']}`, heading: 'alpha.example.test' },
  { path: () => '/hosts/new', heading: 'New host' },
  { path: () => '/target-groups', heading: 'Target groups' },
  { path: () => '/access-lists', heading: 'Access lists' },
  { path: () => '/streams', heading: 'Streams' },
  { path: () => '/certificates', heading: 'Certificates' },
  { path: () => '/dns-providers', heading: 'DNS providers' },
  { path: () => '/security', heading: 'Security', shot: 'security' },
  { path: () => '/logs', heading: 'Logs' },
  { path: () => '/revisions', heading: 'Revisions' },
  { path: () => '/nodes', heading: 'Proxy nodes' },
  { path: () => '/import', heading: 'Import' },
  { path: () => '/tokens', heading: 'API tokens' },
  { path: () => '/settings', heading: 'Settings' },
]

const README_SHOTS = new Set([
  'dashboard-dark',
  'dashboard-phone-dark',
  'hosts-dark',
  'hosts-phone-dark',
  'security-dark',
  'security-phone',
  'security-phone-dark',
])

const axeProblems = (where: string) => axeProblemsOn(page, where)

async function openScreen(path: string, heading: string | RegExp) {
  await page.goto(`${base}${path}`)
  await page.getByRole('heading', { level: 1, name: heading }).waitFor()
  // Loaded: no block still says "Loading…" (dashboard, lists, statistics).
  await expect.poll(() => page.getByText(/^Loading/).count(), { timeout: 15_000 }).toBe(0)
}

/** The page's own width and every element that scrolls sideways inside it (a clipped table, a long value). */
async function overflow() {
  return page.evaluate(() => {
    const wide: string[] = []
    for (const el of Array.from(document.querySelectorAll<HTMLElement>('main *, header *'))) {
      const style = getComputedStyle(el)
      if (style.display === 'none' || el.closest('pre, svg')) continue
      const rect = el.getBoundingClientRect()
      if (rect.right > document.documentElement.clientWidth + 1)
        wide.push(`${el.tagName.toLowerCase()}.${el.className} ends at ${Math.round(rect.right)}`)
      else if (['auto', 'scroll'].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1)
        wide.push(`${el.tagName.toLowerCase()}.${el.className} scrolls ${el.scrollWidth} > ${el.clientWidth}`)
    }
    return { scrollWidth: document.documentElement.scrollWidth, wide: wide.slice(0, 5) }
  })
}

describe('phone and desk', () => {
  it('the login screen fits a phone and has no serious accessibility problem in either theme', async () => {
    const problems: string[] = []
    await page.setViewportSize(PHONE)
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      await openScreen('/login', 'Sign in')
      expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe(scheme)
      expect((await overflow()).scrollWidth).toBeLessThanOrEqual(PHONE.width)
      problems.push(...(await axeProblems(`login ${scheme}`)))
    }
    expect(problems).toEqual([])
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor()
  })

  it('every main screen: nothing wider than 390 px, and no serious or critical axe violation in light and dark at both widths', async () => {
    const overflowing: string[] = []
    const problems: string[] = []
    // Each screen is loaded once, at phone width in the light theme, then checked in the other
    // three combinations in place: width and colour scheme are media features, which the style
    // sheet and the theme's listener follow without a reload (the theme at load is checked in
    // both schemes: light here, dark in the dark-mode case below). Loading every screen four
    // times cost three quarters of this loop and checked nothing more.
    const combos = [
      { size: PHONE, scheme: 'light' },
      { size: PHONE, scheme: 'dark' },
      { size: DESK, scheme: 'dark' },
      { size: DESK, scheme: 'light' },
    ] as const
    for (const s of SCREENS) {
      for (const [i, { size, scheme }] of combos.entries()) {
        await page.setViewportSize(size)
        // The theme follows the system while the toggle says "System" (the default).
        await page.emulateMedia({ colorScheme: scheme })
        if (i === 0) await openScreen(s.path(), s.heading)
        await expect.poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe(scheme)
        if (size === PHONE) {
          const o = await overflow()
          if (o.scrollWidth > PHONE.width || o.wide.length)
            overflowing.push(`${s.path()} ${scheme}: scrollWidth ${o.scrollWidth}; ${o.wide.join('; ')}`)
        }
        problems.push(...(await axeProblems(`${s.path()} ${size.width}px ${scheme}`)))
        // The README's dark and phone shots (the light desk ones and hosts-phone come from ui.test.ts, with more data).
        const shot = `${s.shot}${size === PHONE ? '-phone' : ''}${scheme === 'dark' ? '-dark' : ''}`
        if (README_SHOTS.has(shot)) await screenshot(page, shot)
      }
    }
    expect(overflowing).toEqual([])
    expect(problems).toEqual([])
  }, 240_000) // 15 screens, 60 axe runs, on a machine shared with other suites

  it('on a phone the menu folds behind a button and tables become labelled cards', async () => {
    await page.setViewportSize(PHONE)
    await page.emulateMedia({ colorScheme: 'light' })
    await openScreen('/hosts', 'Hosts')
    const menu = page.getByRole('button', { name: 'Menu' })
    expect(await menu.getAttribute('aria-expanded')).toBe('false')
    expect(await page.getByRole('link', { name: 'Logs' }).isVisible()).toBe(false)
    await menu.click()
    expect(await menu.getAttribute('aria-expanded')).toBe('true')
    await page.getByRole('link', { name: 'Logs' }).click()
    await page.getByRole('heading', { level: 1, name: 'Logs' }).waitFor()
    expect(await menu.getAttribute('aria-expanded')).toBe('false') // picking a screen closes the menu
    // A host row is a card: its cells stacked, each showing its column's name.
    await openScreen('/hosts', 'Hosts')
    const cell = page.locator('tbody tr').filter({ hasText: 'alpha.example.test' }).locator('td').nth(1)
    expect(await cell.getAttribute('data-label')).toBe('Target group')
    expect(await cell.evaluate((td) => getComputedStyle(td, '::before').content)).toBe('"Target group"')
    const [first, second] = await page
      .locator('tbody tr')
      .first()
      .locator('td')
      .evaluateAll((tds) => tds.slice(0, 2).map((td) => td.getBoundingClientRect().top))
    expect(second!).toBeGreaterThan(first!)
    // At desk width the menu button is gone and the links are in view.
    await page.setViewportSize(DESK)
    expect(await menu.isVisible()).toBe(false)
    expect(await page.getByRole('link', { name: 'Logs' }).isVisible()).toBe(true)
  })

  it('dark mode follows the system until the toggle picks a theme, which this browser remembers', async () => {
    await page.emulateMedia({ colorScheme: 'dark' })
    await openScreen('/hosts', 'Hosts')
    const theme = () => page.evaluate(() => document.documentElement.dataset.theme)
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor)
    expect(await theme()).toBe('dark')
    const darkBackground = await background()
    await page.getByLabel('Theme').selectOption('light')
    expect(await theme()).toBe('light')
    expect(await background()).not.toBe(darkBackground)
    await page.reload()
    await page.getByRole('heading', { level: 1, name: 'Hosts' }).waitFor()
    expect(await theme()).toBe('light') // kept over a reload although the system is dark
    await page.getByLabel('Theme').selectOption('dark')
    await page.emulateMedia({ colorScheme: 'light' })
    expect(await theme()).toBe('dark')
    await page.getByLabel('Theme').selectOption('system')
    expect(await theme()).toBe('light')
    await page.emulateMedia({ colorScheme: 'dark' })
    await expect.poll(theme).toBe('dark') // a system change applies without a reload while on "System"
    await page.emulateMedia({ colorScheme: 'light' })
  })

  it('sorts hosts, certificates, decisions and log rows by a column, both ways', async () => {
    const column = (n: number) =>
      page.locator('tbody tr').evaluateAll((rows, i) => rows.map((r) => (r as HTMLTableRowElement).cells[i]?.textContent?.trim() ?? ''), n)
    const sortBy = async (name: string, scope = page.locator('main')) => {
      await scope.getByRole('columnheader', { name }).getByRole('button').click()
    }
    await openScreen('/hosts', 'Hosts')
    expect(await column(0)).toEqual(DOMAINS) // the API's order (by id) until a column is picked
    await sortBy('Domain')
    expect(await column(0)).toEqual([...DOMAINS].sort())
    expect(await page.getByRole('columnheader', { name: 'Domain' }).getAttribute('aria-sort')).toBe('ascending')
    await sortBy('Domain')
    expect(await column(0)).toEqual([...DOMAINS].sort().reverse())
    expect(await page.getByRole('columnheader', { name: 'Domain' }).getAttribute('aria-sort')).toBe('descending')

    await openScreen('/certificates', 'Certificates')
    const uploaded = page.locator('section').filter({ has: page.getByRole('heading', { name: 'Uploaded certificates' }) })
    const uploadedHosts = () => uploaded.locator('tbody tr td:first-child').allTextContents()
    await sortBy('Host', uploaded)
    expect(await uploadedHosts()).toEqual(['alpha.example.test', 'bravo.example.test'])
    await sortBy('Valid', uploaded)
    expect(await uploadedHosts()).toEqual(['alpha.example.test', 'bravo.example.test']) // 10 days before 90 days
    await sortBy('Valid', uploaded)
    expect(await uploadedHosts()).toEqual(['bravo.example.test', 'alpha.example.test'])

    await openScreen('/security', 'Security')
    const decisionValues = () => page.locator('#decisions tbody tr td:first-child').allTextContents()
    await expect.poll(decisionValues).toHaveLength(3)
    await sortBy('Value', page.locator('#decisions'))
    expect(await decisionValues()).toEqual(['203.0.113.9', '203.0.113.20', '203.0.113.100']) // numbers within addresses compare as numbers
    await sortBy('Value', page.locator('#decisions'))
    expect(await decisionValues()).toEqual(['203.0.113.100', '203.0.113.20', '203.0.113.9'])

    await openScreen('/logs?host_domain=charlie.example.test&source=caddy_access', 'Logs')
    const statuses = () => page.getByRole('table', { name: 'Log rows' }).locator('tbody tr td:nth-child(3)').allTextContents()
    await expect.poll(async () => (await statuses()).length).toBeGreaterThanOrEqual(2)
    await sortBy('Status')
    const ascending = (await statuses()).map(Number)
    expect(ascending).toEqual([...ascending].sort((a, b) => a - b))
    expect(ascending).toContain(418)
    await sortBy('Status')
    expect((await statuses()).map(Number)).toEqual([...ascending].reverse())
  })

  it('log filters: a picker of the panel hosts and UTC date-time pickers kept in the address', async () => {
    await openScreen('/logs', 'Logs')
    const hostOptions = await page.locator('#log-host-names option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))
    expect(hostOptions).toEqual(expect.arrayContaining(DOMAINS))
    await page.getByLabel('Host domains').fill('charlie.example.test')
    await page.getByText('More filters').click()
    await page.getByLabel('From (UTC)').fill('2026-01-02T03:04')
    await page.getByRole('button', { name: 'Apply filters' }).click()
    await page.waitForURL(/from=2026-01-02T03(%3A|:)04(%3A|:)00Z/)
    expect(new URL(page.url()).searchParams.get('host_domain')).toBe('charlie.example.test')
    await page.reload()
    await page.getByRole('heading', { level: 1, name: 'Logs' }).waitFor()
    expect(await page.getByLabel('From (UTC)').inputValue()).toBe('2026-01-02T03:04') // read back from the address
    const hosts = await page.getByRole('table', { name: 'Log rows' }).locator('tbody tr td:nth-child(4)').allTextContents()
    expect(hosts.length).toBeGreaterThan(0)
    expect(hosts.every((t) => t.includes('charlie.example.test'))).toBe(true)
    await page.getByRole('button', { name: 'Clear filters' }).click()
  })

  it('asks before leaving a host form with unsaved edits, and not once they are saved', async () => {
    const id = hostIds['bravo.example.test']!
    await openScreen(`/hosts/${id}`, 'bravo.example.test')
    // Untouched: leaving does not ask.
    let asked = 0
    const answer = (accept: boolean) =>
      page.once('dialog', (d) => {
        asked++
        expect(d.message()).toBe('This form has unsaved changes. Leave and lose them?')
        void (accept ? d.accept() : d.dismiss())
      })
    await page.getByRole('link', { name: '← Hosts' }).click()
    await page.getByRole('heading', { level: 1, name: 'Hosts' }).waitFor()
    expect(asked).toBe(0)
    await openScreen(`/hosts/${id}`, 'bravo.example.test')
    await page.getByLabel('Aliases (comma separated)').fill('www.bravo.example.test')
    answer(false)
    await page.getByRole('link', { name: '← Hosts' }).click()
    await expect.poll(() => asked).toBe(1)
    expect(page.url()).toBe(`${base}/hosts/${id}`) // stayed, the edit still there
    expect(await page.getByLabel('Aliases (comma separated)').inputValue()).toBe('www.bravo.example.test')
    answer(true)
    await page.getByRole('link', { name: '← Hosts' }).click()
    await page.getByRole('heading', { level: 1, name: 'Hosts' }).waitFor()
    expect(asked).toBe(2)
    expect((await api(`/api/hosts/${id}`)).json.aliases).toEqual([]) // left without saving
    // Saved edits: leaving does not ask.
    await openScreen(`/hosts/${id}`, 'bravo.example.test')
    await page.getByLabel('Aliases (comma separated)').fill('www.bravo.example.test')
    await page.getByRole('button', { name: 'Save host' }).click()
    await page.getByText('Host saved and applied to the proxy.').waitFor()
    await page.getByRole('link', { name: '← Hosts' }).click()
    await page.getByRole('heading', { level: 1, name: 'Hosts' }).waitFor()
    expect(asked).toBe(2)
    expect((await api(`/api/hosts/${id}`)).json.aliases).toEqual(['www.bravo.example.test'])
  })

  it('LAN-only lists the ranges that pass; ForwardAuth names the login URL and warns that a loopback one cannot work for visitors', async () => {
    const gates = (await api('/api/system/gates')).json
    expect(gates.lan_ranges).toEqual(['127.0.0.0/8', '::1/128', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'])
    expect(gates.forward_auth.login_url).toBe('https://127.0.0.1/login') // PANEL_PUBLIC_URL unset: https://<PANEL_DOMAIN>
    await openScreen(`/hosts/${hostIds['alpha.example.test']}`, 'alpha.example.test')
    await page.getByRole('checkbox', { name: 'LAN only' }).check()
    expect(await page.getByTestId('lan-help').textContent()).toBe(
      `LAN only: requests from ${gates.lan_ranges.join(', ')} pass; every other address gets 403 "Access denied: LAN only". Behind a CDN or load balancer, set the trusted proxies in Settings so the visitor's address is judged.`,
    )
    await page.getByRole('checkbox', { name: 'Require panel login (ForwardAuth)' }).check()
    expect(await page.getByTestId('forward-auth-help').textContent()).toMatch(
      /^ForwardAuth: a visitor who is not signed in to the panel is sent to https:\/\/127\.0\.0\.1\/login, and back to the page asked for afterwards when this host is under 127\.0\.0\.1\./,
    )
    await page
      .locator('.notice.warn')
      .filter({ hasText: "ForwardAuth: the login page is on 127.0.0.1, which a visitor's browser takes for its own machine" })
      .waitFor()
    // Undone: the form is as loaded again, so leaving asks nothing.
    await page.getByRole('checkbox', { name: 'LAN only' }).uncheck()
    await page.getByRole('checkbox', { name: 'Require panel login (ForwardAuth)' }).uncheck()
    expect(await page.getByTestId('lan-help').count()).toBe(0)
  })

  it('asks before disabling a host; "no" keeps it served, "yes" takes it offline', async () => {
    const domain = 'charlie.example.test'
    await openScreen('/hosts', 'Hosts')
    const box = page.getByRole('checkbox', { name: `Enabled: ${domain}` })
    let question = ''
    page.once('dialog', (d) => {
      question = d.message()
      void d.dismiss()
    })
    await box.click()
    await expect.poll(() => question).toBe(`Disable ${domain}? The proxy stops serving it until it is enabled again.`)
    expect(await box.isChecked()).toBe(true)
    expect((await api(`/api/hosts/${hostIds[domain]}`)).json.enabled).toBe(true)
    expect((await through('/still-served', domain)).status).toBe(200)
    page.once('dialog', (d) => void d.accept())
    await box.click()
    await page.getByText(`${domain} is now disabled.`).waitFor()
    expect((await api(`/api/hosts/${hostIds[domain]}`)).json.enabled).toBe(false)
    const before = upstream.requests.length
    await through('/after-disable', domain)
    expect(upstream.requests.length).toBe(before) // Caddy no longer sends it upstream
    // Enabling asks nothing.
    await box.click()
    await page.getByText(`${domain} is now enabled.`).waitFor()
    expect((await through('/enabled-again', domain)).status).toBe(200)
  })

  it('links to the API reference from the menu', async () => {
    const link = page.getByRole('link', { name: 'API reference' })
    expect(await link.getAttribute('href')).toBe('/api/docs')
    const res = await chrome.browser.request.get(`${base}/api/docs`)
    expect(res.status()).toBe(200)
    expect(res.headers()['content-type']).toMatch(/^text\/html/)
  })

  it('the overflow and axe checks themselves catch a wide element and an unlabelled image', async () => {
    await page.setViewportSize(PHONE)
    await openScreen('/hosts', 'Hosts')
    await page.evaluate(() => {
      const wide = Object.assign(document.createElement('div'), { textContent: 'wide' })
      wide.style.width = '900px'
      document.querySelector('main')!.append(
        wide,
        Object.assign(document.createElement('img'), {
          src: 'data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7',
        }),
      )
    })
    const o = await overflow()
    expect(o.scrollWidth).toBeGreaterThan(PHONE.width)
    expect(o.wide.join()).toMatch(/^div\. ends at 9\d\d/)
    expect((await axeProblems('probe')).join()).toMatch(/image-alt \(critical\)/)
    await page.setViewportSize(DESK)
  })

  it('logged no console error in the whole run', () => {
    expect(consoleErrors).toEqual([])
  })
})

describe('errors at the field', () => {
  const fieldError = (text: string | RegExp) => page.locator('.field-error').filter({ hasText: text })
  const focusedName = () => page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.name)

  it('host form: the refusal shows under Domain with its label, focuses it, and goes once the field changes; nothing is saved', async () => {
    await page.setViewportSize(DESK)
    const before = (await api('/api/hosts')).json.length
    await openScreen('/hosts/new', 'New host')
    await page.getByLabel('Domain', { exact: true }).fill('not a host!')
    await page.getByLabel('TLS mode').selectOption('none')
    await page.getByRole('button', { name: 'Create host' }).click()
    await fieldError(/^Domain: must be a valid hostname/).waitFor()
    const domain = page.getByLabel('Domain', { exact: true })
    expect(await domain.getAttribute('aria-invalid')).toBe('true')
    expect(await focusedName()).toBe('domain')
    // The field reads the refusal as its description; no banner repeats it with the API's path.
    expect(await domain.evaluate((el) => document.getElementById(el.getAttribute('aria-describedby')!)?.textContent)).toMatch(
      /^Domain: must be a valid hostname/,
    )
    expect(await page.getByText(/^domain:/).count()).toBe(0)
    await domain.pressSequentially('x')
    expect(await fieldError(/Domain/).count()).toBe(0)
    expect(await domain.getAttribute('aria-invalid')).toBe(null)
    expect((await api('/api/hosts')).json.length).toBe(before)
    consoleErrors.splice(0).forEach((e) => expect(e).toMatch(/status of 400/)) // the refusal is the scenario
  })

  it('target group form: an indexed path (targets.0.address) is shown as "Target 1 address"', async () => {
    await openScreen('/target-groups', 'Target groups')
    await page.getByRole('button', { name: 'Add target group' }).click()
    await page.getByLabel('Group name').fill('broken')
    await page.getByLabel('Target 1 address').fill('no address here')
    await page.getByRole('button', { name: 'Save target group' }).click()
    await fieldError(/^Target 1 address: /).waitFor()
    expect(await focusedName()).toBe('targets.0.address')
    expect((await api('/api/target-groups')).json.map((g: any) => g.name)).not.toContain('broken')
    await page.getByLabel('Target 1 address').fill('127.0.0.1:9')
    expect(await fieldError(/Target 1/).count()).toBe(0)
    consoleErrors.splice(0).forEach((e) => expect(e).toMatch(/status of 400/))
  })

  it('security: the ban form places a bad duration at its field; a form without that field gets a banner with the label, not the path', async () => {
    await openScreen('/security', 'Security')
    await page.getByLabel('Address or range to ban').fill('198.51.100.200')
    await page.getByLabel('Duration of the ban').fill('forever')
    await page.getByRole('button', { name: 'Ban', exact: true }).click()
    await fieldError(/^Duration: must be a duration/).waitFor()
    expect(await focusedName()).toBe('duration')
    expect((await api('/api/security/decisions?q=198.51.100.200')).json).toEqual([])
    await page.getByLabel('IP address to unban').fill('not-an-ip')
    await page.getByRole('button', { name: 'Unban IP' }).click()
    await page
      .getByRole('alert')
      .filter({ hasText: /^IP address: must be an IPv4 or IPv6 address/ })
      .waitFor()
    consoleErrors.splice(0).forEach((e) => expect(e).toMatch(/status of 400/))
  })

  it('logged no other console error', () => {
    expect(consoleErrors).toEqual([])
  })
})

describe('settings and choices in words', () => {
  it('settings have labels, units and groups; the backup cron is in words with its next runs; a refusal shows at the field', async () => {
    await page.setViewportSize(DESK)
    await openScreen('/settings', 'Settings')
    await page.getByRole('group', { name: 'Logs' }).waitFor()
    const retention = page.getByLabel('Keep log rows for (days)')
    const schedule = page.getByLabel('Backup schedule (cron, UTC)')
    await schedule.fill('0 3 * * 1')
    const next = new Cron('0 3 * * 1', { paused: true, timezone: 'UTC' })
      .nextRuns(3)
      .map((d) => `${d.toISOString().replace('T', ' ').slice(0, 16)} UTC`)
    const words = page.getByTestId('cron-words')
    expect((await words.textContent())!.trim()).toBe(`At 03:00, only on Monday (UTC). Next runs: ${next.join(', ')}.`)
    await schedule.fill('every day')
    expect((await words.textContent())!.trim()).toMatch(/^not a cron expression/)
    await schedule.fill('0 3 * * 1')
    await retention.fill('0')
    await page.getByRole('button', { name: 'Save settings' }).click()
    await page
      .locator('.field-error')
      .filter({ hasText: /^Keep log rows for: / })
      .waitFor()
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement).name)).toBe('logs.retention_days')
    expect((await api('/api/settings')).json['backup.schedule']).not.toBe('0 3 * * 1') // refused whole: nothing saved
    consoleErrors.splice(0).forEach((e) => expect(e).toMatch(/status of 400/))
    await retention.fill('30')
    await page.getByRole('button', { name: 'Save settings' }).click()
    await page.getByText('Settings saved.').waitFor()
    expect((await api('/api/settings')).json).toMatchObject({ 'backup.schedule': '0 3 * * 1', 'logs.retention_days': 30 })
  })

  it('load-balancing policies and notification events are named in words', async () => {
    await openScreen('/target-groups', 'Target groups')
    expect(await page.getByRole('row').filter({ hasText: 'web' }).getByRole('cell').nth(3).textContent()).toBe(
      'Round robin (each target in turn)',
    )
    await page.getByRole('button', { name: 'Edit target group web' }).click()
    expect(await page.getByLabel('Load balancing').locator('option').allTextContents()).toContain('Same client address, same target')
    await page.getByRole('button', { name: 'Cancel' }).click()
    await openScreen('/settings', 'Settings')
    await page.getByRole('button', { name: 'Add rule' }).click()
    await page.getByRole('checkbox', { name: 'Certificate renewal failed' }).waitFor()
    await page.getByRole('checkbox', { name: 'Failed sign-in' }).waitFor()
  })
})

describe('unban IP', () => {
  it('previews the decisions it will remove, ranges included, and asks before acting', async () => {
    await postDecisions(cs, [
      { value: '192.0.2.0/24', scope: 'Range', duration: '2h' },
      { value: '192.0.2.5', duration: '2h' },
    ])
    const preview = (await api('/api/security/decisions/unban-ip?ip=192.0.2.5')).json
    expect(preview.would_remove.map((d: any) => d.value).sort()).toEqual(['192.0.2.0/24', '192.0.2.5'])
    expect(preview.kept_country_decisions).toEqual([])
    expect(await decisionsFor(cs, '192.0.2.5')).toHaveLength(2) // the preview removes nothing
    await page.setViewportSize(DESK)
    await openScreen('/security', 'Security')
    await page.getByLabel('IP address to unban').fill('192.0.2.5')
    let question = ''
    page.once('dialog', (d) => {
      question = d.message()
      void d.dismiss()
    })
    await page.getByRole('button', { name: 'Unban IP' }).click()
    await expect.poll(() => question).toMatch(/^Unban 192\.0\.2\.5\? This removes 2 decision\(s\): /)
    expect(question).toMatch(/192\.0\.2\.0\/24 \(Range, /)
    expect(await decisionsFor(cs, '192.0.2.5')).toHaveLength(2) // "no" removed nothing
    page.once('dialog', (d) => void d.accept())
    await page.getByRole('button', { name: 'Unban IP' }).click()
    await page.getByText('192.0.2.5: 2 decision(s) removed.').waitFor()
    expect(await decisionsFor(cs, '192.0.2.5')).toEqual([])
    // Nothing left to remove: it says so and asks nothing.
    await page.getByLabel('IP address to unban').fill('192.0.2.5')
    await page.getByRole('button', { name: 'Unban IP' }).click()
    await page.getByText('No decision to remove bans 192.0.2.5.').waitFor()
  })
})

describe('decisions by origin', () => {
  it('groups each page by origin with the size of each group over every page; an origin button narrows the list to it; fits a phone', async () => {
    // 120 blocklist bans and one from the community blocklist, after the three cscli ones: the
    // newest page of 100 holds the CAPI one and 99 of the blocklist's.
    const listed = Array.from({ length: 120 }, (_, i) => `100.64.0.${i + 1}`)
    await postDecisions(cs, [
      ...listed.map((value) => ({ value, origin: 'lists', scenario: 'lists:firehol_level1', duration: '2h' })),
      { value: '100.65.0.1', origin: 'CAPI', scenario: 'crowdsecurity/http-probing', duration: '2h' },
    ])
    await page.setViewportSize(DESK)
    await openScreen('/security', 'Security')
    await page.getByRole('button', { name: 'Refresh decisions' }).click() // the engine read now, not the 15 s copy
    const facets = page.getByRole('group', { name: 'Decisions by origin' })
    await facets.getByRole('button', { name: 'Blocklist subscriptions (lists): 120' }).waitFor()
    const counts = (await api('/api/security/decisions/origins')).json
    const count = (origin: string) => counts.origins.find((o: any) => o.origin === origin)?.count
    expect([count('lists'), count('CAPI'), count('cscli')]).toEqual([120, 1, 3])
    expect(await facets.getByRole('button').allTextContents()).toEqual([
      `All origins: ${counts.total}`,
      'Blocklist subscriptions (lists): 120',
      'Made with cscli (cscli): 3',
      'Community blocklist (CAPI): 1',
    ])
    expect(await facets.getByRole('button', { name: /^All origins/ }).getAttribute('aria-pressed')).toBe('true')
    // One group per origin on the page, biggest first, each row under the header of its own origin.
    const groups = async () =>
      page.locator('#decisions tbody').evaluateAll((bodies) =>
        bodies.map((b) => ({
          head: b.querySelector('th[scope=colgroup]')?.textContent ?? '',
          origins: [
            ...new Set(Array.from(b.querySelectorAll('tr:not(.group-head)'), (r) => (r as HTMLTableRowElement).cells[2]?.textContent)),
          ],
        })),
      )
    expect(await groups()).toEqual([
      { head: 'Blocklist subscriptions (lists): 120 active, 99 on this page', origins: ['lists'] },
      { head: 'Community blocklist (CAPI): 1 active', origins: ['CAPI'] },
    ])
    // The next page: the rest of the blocklist, then the cscli bans.
    await page.getByRole('button', { name: 'Older decisions' }).click()
    await expect.poll(async () => (await groups())[0]?.head).toBe('Blocklist subscriptions (lists): 120 active, 21 on this page')
    expect((await groups())[1]).toEqual({ head: 'Made with cscli (cscli): 3 active', origins: ['cscli'] })
    // An origin button: the list holds that origin alone, paged by the server.
    await facets.getByRole('button', { name: 'Made with cscli (cscli): 3' }).click()
    await expect.poll(groups).toEqual([{ head: 'Made with cscli (cscli): 3 active', origins: ['cscli'] }])
    expect(await facets.getByRole('button', { name: 'Made with cscli (cscli): 3' }).getAttribute('aria-pressed')).toBe('true')
    expect(await page.getByTestId('decisions-freshness').textContent()).toMatch(/^\s*3 active decision\(s\) matching, as of /)
    // On a phone the buttons wrap and the group headers sit above their cards: nothing wider than the screen.
    await page.setViewportSize(PHONE)
    await facets.getByRole('button', { name: /^All origins/ }).click()
    await expect.poll(async () => (await groups()).length).toBe(2)
    const o = await overflow()
    expect(o.wide).toEqual([])
    expect(o.scrollWidth).toBeLessThanOrEqual(PHONE.width)
    await page.setViewportSize(DESK)
  })
})

describe('geolocation', () => {
  // A download source on loopback: the country file exists, the AS file does not.
  let source: Server
  beforeAll(async () => {
    const country = writeMmdb([
      ['5.0.0.0/24', { country_code: 'LU' }],
      ['5.0.1.0/24', { country_code: 'LU' }],
      ['81.2.69.0/24', { country_code: 'GB' }],
    ])
    source = createServer((req, res) => {
      if (req.url === '/country.mmdb') res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(country)
      else res.writeHead(404).end('not here')
    })
    await new Promise<void>((resolve) => source.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(source.address() as AddressInfo).port}`
    expect(
      (
        await api('/api/settings', {
          method: 'PUT',
          body: { 'geoip.country_url': `${url}/country.mmdb`, 'geoip.asn_url': `${url}/asn.mmdb` },
        })
      ).status,
    ).toBe(200)
  })
  afterAll(async () => {
    if (!source) return
    source.closeAllConnections() // the panel's fetch may keep its connection alive
    await new Promise<void>((resolve) => source.close(() => resolve()))
  })

  it('"Download now" shows each database\'s result, version and age', async () => {
    await page.setViewportSize(DESK)
    await openScreen('/security', 'Security')
    const geoTable = page
      .locator('section')
      .filter({ has: page.getByRole('heading', { name: 'Geolocation databases' }) })
      .getByRole('table')
    const rowOf = (name: string) => geoTable.getByRole('row').filter({ has: page.getByRole('cell', { name, exact: true }) })
    expect(await rowOf('Country').getByRole('cell').nth(1).textContent()).toBe('not loaded')
    await page.getByRole('button', { name: 'Download now' }).click()
    const result = page.getByRole('list', { name: 'Download result per database' })
    await result.waitFor()
    const lines = await result.getByRole('listitem').allTextContents()
    const status = (await api('/api/geoip/status')).json
    expect(status).toMatchObject({ country: { loaded: true }, asn: { loaded: false }, last_refresh_status: 'failed' })
    // The version is the database's build time; its age counts from there.
    const age = Math.floor((Date.now() / 1000 - status.country.build_epoch) / 86_400)
    const built = new Date(status.country.version).toISOString().replace('T', ' ').slice(0, 19)
    expect(lines[0]).toBe(`Country: downloaded, version ${built} UTC, ${age} day(s) old`)
    // No AS file was ever downloaded: the line names the URL and the setting, and claims no kept file.
    expect(lines[1]).toBe(
      `AS number database: the download from http://127.0.0.1:${(source.address() as AddressInfo).port}/asn.mmdb failed (it answered 404 Not Found). Check "AS number database URL" in Settings -> Geolocation. Change the URL in Settings → Geolocation`,
    )
    expect(await rowOf('Country').getByRole('cell').nth(1).textContent()).toBe('loaded, older than 30 days') // the writer dates it 2023-11-14
    expect(await rowOf('Country').getByRole('cell').nth(3).textContent()).toBe(`${age} day(s)`)
    expect(await rowOf('AS number').getByRole('cell').nth(1).textContent()).toBe('not loaded')
    consoleErrors.splice(0).forEach((e) => expect(e).toMatch(/status of 502/)) // the AS file's refusal is the scenario
  })

  it('the country field is a searchable list of names: a name resolves to its code, a fragment is refused at the field', async () => {
    const field = page.getByLabel('Country', { exact: true })
    const options = await page.locator('#country-options option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))
    expect(options.length).toBeGreaterThan(240)
    expect(options).toContain('Luxembourg (LU)')
    expect(options).toContain('Georgia (GE)')
    await field.fill('Germany')
    await page.getByText('Bans Germany (DE)').waitFor() // not GE (Georgia)
    await field.fill('USA')
    await page.getByText('Bans United States of America (US)').waitFor()
    await field.fill('Lux')
    await page.getByLabel('Ban duration').fill('1h')
    await page.getByRole('button', { name: 'Ban country' }).click()
    await page.locator('.field-error').filter({ hasText: 'Country: choose a country from the list' }).waitFor()
    expect(await field.getAttribute('aria-invalid')).toBe('true')
    expect((await api('/api/security/jobs')).json).toEqual([]) // nothing was asked of the engine
    await field.fill('Luxembourg (LU)')
    await page.getByRole('button', { name: 'Ban country' }).click()
    await page.getByRole('progressbar', { name: 'Country ban progress of LU' }).waitFor()
    await page.getByRole('button', { name: 'Revoke ban of LU' }).waitFor({ timeout: 30_000 })
    expect((await decisionsFor(cs, '5.0.1.7')).map((d) => d.origin)).toEqual(['panel-country-LU'])
  })

  it('decisions: country ranges collapsed under their country, and a refresh that reads the engine now', async () => {
    await openScreen('/security', 'Security')
    const rows = page.locator('#decisions tbody tr')
    await page
      .getByTestId('country-summary')
      .filter({ hasText: /Luxembourg \(LU\), \d+ range\(s\)/ })
      .waitFor()
    expect(await rows.filter({ hasText: 'panel-country-LU' }).count()).toBe(0) // not flooding the list
    await page.getByRole('button', { name: 'Show the ranges of LU' }).click()
    await rows.filter({ hasText: 'panel-country-LU' }).first().waitFor()
    expect(await rows.count()).toBe(await rows.filter({ hasText: 'panel-country-LU' }).count())
    // A ban made in the engine a moment ago is in the answer of Refresh decisions (fresh=1), not 15 s later.
    await page
      .getByRole('group', { name: 'Decisions by origin' })
      .getByRole('button', { name: /^All but country-ban ranges: / })
      .click()
    await postDecisions(cs, [{ value: '198.51.100.250', duration: '1h' }])
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().includes('/api/security/decisions?') && r.url().includes('fresh=1')),
      page.getByRole('button', { name: 'Refresh decisions' }).click(),
    ])
    expect((await answer.json()).map((d: any) => d.value)).toContain('198.51.100.250')
    await rows.filter({ hasText: '198.51.100.250' }).waitFor()
  })

  it('logged no other console error', () => {
    expect(consoleErrors).toEqual([])
  })
})

describe('failures explained in place (a proxy without the WAF and rate-limit modules)', () => {
  // A second panel and Caddy told the proxy lacks those modules, on the same engine.
  // Its session cookie replaces the first panel's (cookies ignore the port): this block runs last.
  // Its PANEL_INTERNAL_URL has nothing behind it: the proxy cannot reach the panel for ForwardAuth.
  let lean: ProxyStack
  let deadPort: number
  let otherId: number
  beforeAll(async () => {
    deadPort = await unusedPort()
    lean = await startProxyStack({
      env: {
        ...panelEnvFor(cs),
        PROXY_MODULES: 'crowdsec,dns',
        PANEL_DOMAIN: '127.0.0.1',
        PANEL_PUBLIC_URL: '',
        PANEL_INTERNAL_URL: `http://127.0.0.1:${deadPort}`,
      },
    })
    const group = await createGroup(lean, { name: 'lean', targets: [{ address: `127.0.0.1:${upstream.port}` }] })
    expect(
      (
        await createHost(lean, {
          domain: 'guarded.example.test',
          target_group_id: group.id,
          waf_enabled: true,
          waf_mode: 'blocking',
          rate_limit_enabled: true,
        })
      ).status,
    ).toBe(201)
    const other = await createHost(lean, { domain: 'other.example.test', target_group_id: group.id })
    expect(other.status).toBe(201)
    otherId = other.json.id
    const [name, value] = lean.admin.split(';')[0]!.split('=')
    await chrome.browser.addCookies([{ name: name!, value: value!, url: lean.panel.url }])
  }, 120_000)
  afterAll(async () => {
    await lean?.stop()
  })

  it('a protection the proxy cannot apply says "not enforced" and why; a save warns only about the host saved; a dashboard problem links to its screen', async () => {
    await page.setViewportSize(DESK)
    await page.goto(`${lean.panel.url}/hosts`)
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'guarded.example.test' }) })
    await row.getByText('WAF not enforced').waitFor()
    expect(await row.getByText('(the proxy has no waf module)').count()).toBe(1)
    expect(await row.getByText('rate limit not enforced').count()).toBe(1)
    expect(await row.getByText('(the proxy has no ratelimit module)').count()).toBe(1)
    // Saving the other host: the push still warns about guarded.example.test, but that is not this save's news.
    await page.getByRole('link', { name: 'other.example.test' }).click()
    await page.getByLabel('Aliases (comma separated)').fill('www.other.example.test')
    await page.getByRole('button', { name: 'Save host' }).click()
    await page.getByText('Host saved and applied to the proxy.', { exact: true }).waitFor()
    // The guarded host's own save does carry its warnings.
    await page.getByRole('link', { name: '← Hosts' }).click()
    await page.getByRole('link', { name: 'guarded.example.test' }).click()
    await page.getByLabel('Aliases (comma separated)').fill('www.guarded.example.test')
    await page.getByRole('button', { name: 'Save host' }).click()
    await page
      .getByText(/^Host saved and applied to the proxy\. Warnings: host guarded\.example\.test: the proxy has no ratelimit module/)
      .waitFor()
    // The dashboard's geolocation problem (no database here) links to where it is fixed.
    await page.getByRole('link', { name: 'Dashboard' }).click()
    // The problem's words and its link are apart (they read "not loadedDownload the databases").
    const geoProblem = page.getByTestId('problems').getByRole('listitem').filter({ hasText: 'country database' })
    expect((await geoProblem.textContent())!.replace(/\s+/g, ' ').trim()).toMatch(
      /^Warning country database: not loaded: .+ · Download the databases$/,
    )
    await page.getByRole('link', { name: 'Download the databases' }).click()
    await page.getByRole('button', { name: 'Download now' }).waitFor()
    expect(page.url()).toBe(`${lean.panel.url}/security#countries`)
  })

  it('the ForwardAuth check, asked through the proxy, says it cannot reach the panel and what to set', async () => {
    await page.goto(`${lean.panel.url}/hosts/${otherId}`)
    await page.getByRole('checkbox', { name: 'Require panel login (ForwardAuth)' }).check()
    await page.getByRole('button', { name: 'Check that the proxy reaches the panel' }).click()
    const alert = page.getByRole('alert').filter({ hasText: /^Not reachable: / })
    await alert.waitFor()
    expect(await alert.textContent()).toBe(
      `Not reachable: the proxy could not reach the panel at 127.0.0.1:${deadPort} (it answered 502), and nothing answers at http://127.0.0.1:${deadPort} from the panel's side either: set PANEL_INTERNAL_URL to the address the proxy reaches the panel at (the panel listens on port ${lean.panel.port}).`,
    )
    expect((await lean.panel.request('/api/system/forward-auth-check', { cookie: lean.admin })).json).toMatchObject({
      state: 'unreachable',
      panel_address: `127.0.0.1:${deadPort}`,
      proxy_status: 502,
    })
    await page.getByRole('checkbox', { name: 'Require panel login (ForwardAuth)' }).uncheck() // nothing saved
  })

  it('logged no console error', () => {
    expect(consoleErrors).toEqual([])
  })
})
