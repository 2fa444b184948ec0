import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { decisionsFor, panelEnvFor, postDecisions, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { eventually, httpRequest } from '../support/http'
import { makeTempDir } from '../support/processes'
import { createPublicClientNamespace, type PublicClientNamespace } from '../support/netns'
import { ADMIN, registerTestSecret } from '../support/panel'
import { startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { createTestPki } from '../support/certs'
import { writeMmdb } from '../support/mmdb-writer'
import { firstPage, launchChromium, screenshot } from './browser'

// The web UI in a real Chromium against the built panel, a real Caddy and a real
// CrowdSec. Every control is found by its role and accessible name.

const DOMAIN = 'app.example.test'
const BANNED_ONE = '203.0.113.77'
const BANNED_TWO = '203.0.113.78'
const VIEWER = { email: 'viewer@example.test', password: 'viewer-password-123' }
// A country database written by the test: LU expands into two supernets.
const GEO_DB = writeMmdb([
  ['5.0.0.0/24', { country_code: 'LU' }],
  ['5.0.1.0/24', { country_code: 'LU' }],
  ['5.0.2.0/23', { country_code: 'LU' }],
  ['2a01:e00::/32', { country_code: 'LU' }],
  ['81.2.69.0/24', { country_code: 'GB' }],
  ['203.0.113.0/24', { country_code: 'FR' }],
  ['198.51.100.0/24', { country_code: 'DE' }],
])

let cs: CrowdsecHandle
let stack: ProxyStack
let upstream: TestUpstream
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let base: string
let ns: PublicClientNamespace
const consoleErrors: string[] = []

const through = (path = '/', host = DOMAIN) => httpRequest({ port: stack.httpPort, host, path })

beforeAll(async () => {
  cs = await startCrowdsec()
  registerTestSecret(cs.machinePassword, cs.bouncerKey, VIEWER.password)
  await cs.cscli(['scenarios', 'install', 'crowdsecurity/http-probing'])
  await cs.cscli(['scenarios', 'install', 'crowdsecurity/http-crawl-non_statics'])
  // Bans exist before any screen reads the (15 s cached) decision list.
  await postDecisions(cs, [
    { value: BANNED_ONE, duration: '2h' },
    { value: BANNED_TWO, duration: '2h' },
  ])
  upstream = await startTestUpstream()
  // A network namespace on 198.51.100.0/24 is the public client (its country is DE in the test database);
  // it must exist before Caddy binds 198.51.100.1.
  ns = await createPublicClientNamespace({ hostAddress: '198.51.100.1', clientAddresses: ['198.51.100.10'] })
  const dataDir = makeTempDir('panel-ui-')
  mkdirSync(join(dataDir, 'geoip'))
  writeFileSync(join(dataDir, 'geoip/country.mmdb'), GEO_DB)
  // The browser talks to 127.0.0.1: no cookie Domain (an IP has no parent domain).
  stack = await startProxyStack({
    dataDir,
    httpListenExtra: ['198.51.100.1'],
    env: { ...panelEnvFor(cs), PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' },
  })
  base = stack.panel.url
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  page.on('dialog', (d) => d.accept())
}, 120_000)

afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await upstream?.stop()
  await ns?.destroy()
  await cs?.stop()
})

describe('the web UI in Chromium', () => {
  it('is served at / with deep links answered by the app, while /api/* and missing files stay JSON 404s', async () => {
    for (const path of ['/', '/login', '/hosts/12', '/security']) {
      const res = await stack.panel.request(path)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^text\/html/)
      expect(res.text).toContain('<div id="app"></div>')
      expect(res.text).toContain('<meta name="panel-session" content="none">')
    }
    // With a valid cookie the page says so: the app then asks for the session instead of assuming none.
    expect((await stack.panel.request('/hosts/12', { cookie: stack.admin })).text).toContain('<meta name="panel-session" content="active">')
    const api404 = await stack.panel.request('/api/no-such-route', { cookie: stack.admin })
    expect([api404.status, api404.json]).toEqual([404, { error: 'no route for GET /api/no-such-route' }])
    expect((await stack.panel.request('/api/hosts')).status).toBe(401)
    expect((await stack.panel.request('/assets/missing-chunk.js')).status).toBe(404)
    expect((await stack.panel.request('/healthz')).text).toBe('ok')
  })

  it('answers a deep link with the app, sends it to login with rd, and returns there after login', async () => {
    await page.goto(`${base}/hosts`)
    await page.waitForURL(/\/login\?rd=(%2F|\/)hosts$/)
    await expectVisible(page.getByRole('heading', { name: 'Sign in' }))
    await screenshot(page, 'login')
    await page.getByLabel('Email').fill(ADMIN.email)
    await page.getByLabel('Password').fill('wrong-password-123')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await expectVisible(page.getByRole('alert'))
    expect(consoleErrors.splice(0)).toEqual([expect.stringMatching(/status of 401/)]) // the refused login is the scenario
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`${base}/hosts`)
    await expectVisible(page.getByRole('heading', { name: 'Hosts' }))
    await expectVisible(page.getByText('No hosts yet'))
  })

  it('creates a target group and a host, and a request through Caddy reaches the upstream', async () => {
    await page.getByRole('link', { name: 'Target groups' }).click()
    await page.getByRole('button', { name: 'Add target group' }).click()
    await page.getByLabel('Group name').fill('web')
    await page.getByLabel('Target 1 address').fill(`127.0.0.1:${upstream.port}`)
    await page.getByRole('button', { name: 'Save target group' }).click()
    await expectVisible(page.getByText('Target group web saved.'))
    await expectVisible(page.getByRole('cell', { name: `127.0.0.1:${upstream.port}` }))
    await screenshot(page, 'target-groups')

    await page.getByRole('link', { name: 'Hosts', exact: true }).click()
    await page.getByRole('link', { name: 'Add host' }).click()
    await page.getByLabel('Domain', { exact: true }).fill(DOMAIN)
    await page.getByLabel('Target group').selectOption({ label: 'web' })
    await page.getByLabel('TLS mode').selectOption('none')
    await page.getByRole('button', { name: 'Create host' }).click()
    await expectVisible(page.getByText('Host created and applied to the proxy.'))
    await page.waitForURL(/\/hosts\/\d+$/)

    // The API's refusal shows at the field it names, with the field's label: a second host with the same name.
    const hostUrl = page.url()
    await page.goto(`${base}/hosts/new`)
    await page.getByLabel('Domain', { exact: true }).fill(DOMAIN)
    await page.getByLabel('TLS mode').selectOption('none')
    await page.getByRole('button', { name: 'Create host' }).click()
    await expectVisible(page.locator('.field-error').filter({ hasText: `Domain: ${DOMAIN} is already used by host` }))
    expect(consoleErrors.splice(0)).toEqual([expect.stringMatching(/status of 409/)]) // the refusal is the scenario
    await page.goto(hostUrl)

    const res = await through('/from-the-browser-test')
    expect(res.status).toBe(200)
    expect(upstream.requests.some((r) => r.url === '/from-the-browser-test')).toBe(true)
  })

  it('toggles LAN-only on the host: a public client gets 403, loopback still passes', async () => {
    {
      const fromPublic = () => ns.curl(`http://198.51.100.1:${stack.httpPort}/from-public`, ['-H', `Host: ${DOMAIN}`])
      expect((await fromPublic()).status).toBe(200)
      await page.getByRole('checkbox', { name: 'LAN only' }).check()
      await page.getByRole('button', { name: 'Save host' }).click()
      await expectVisible(page.getByText('Host saved and applied to the proxy.'))
      const hosts = (await stack.panel.request('/api/hosts', { cookie: stack.admin })).json
      expect(hosts[0]).toMatchObject({ domain: DOMAIN, lan_only: true })
      for (let i = 0; i < 3; i++) expect((await fromPublic()).status).toBe(403)
      expect((await through('/lan-only-from-loopback')).status).toBe(200)
    }
    // A path rule from the rules editor answers through Caddy.
    await page.getByRole('button', { name: 'Add rule' }).click()
    await page.getByLabel('Path (prefix with *)').fill('/teapot*')
    await page.getByLabel('Action').selectOption('respond')
    await page.getByLabel('Response status').fill('418')
    await page.getByLabel('Response body').fill('short and stout')
    await page.getByRole('button', { name: 'Save rule' }).click()
    await expectVisible(page.getByRole('button', { name: 'Edit rule /teapot*' }))
    const teapot = await through('/teapot/pot')
    expect([teapot.status, teapot.body]).toEqual([418, 'short and stout'])
    await screenshot(page, 'host-edit')
    await page.getByRole('link', { name: '← Hosts' }).click()
    // The host form also says "LAN only" (its switch and what it does): wait for the list's badge.
    await page.waitForURL(/\/hosts$/)
    await expectVisible(page.locator('.badge').filter({ hasText: 'LAN only' }))
  })

  it('uploads a certificate: the host switches to it and its metadata is listed', async () => {
    const pki = createTestPki()
    const leaf = pki.leaf(DOMAIN, { sans: [DOMAIN] })
    registerTestSecret(leaf.keyPem)
    const dir = makeTempDir('pem-')
    writeFileSync(join(dir, 'cert.pem'), leaf.certPem)
    writeFileSync(join(dir, 'key.pem'), leaf.keyPem)
    writeFileSync(join(dir, 'chain.pem'), pki.intermediatePem)
    await page.getByRole('link', { name: 'Certificates' }).click()
    await page.getByLabel('Host of the certificate').selectOption({ label: DOMAIN })
    await page.getByLabel('Certificate PEM file').setInputFiles(join(dir, 'cert.pem'))
    await page.getByLabel('Private key PEM file').setInputFiles(join(dir, 'key.pem'))
    await page.getByLabel('Chain PEM file (optional)').setInputFiles(join(dir, 'chain.pem'))
    await page.getByRole('button', { name: 'Upload certificate' }).click()
    await expectVisible(page.getByText(`Certificate for ${DOMAIN} uploaded; the host now uses it.`))
    await expectVisible(page.getByRole('link', { name: `Download certificate of ${DOMAIN}` }))
    expect((await stack.panel.request('/api/hosts', { cookie: stack.admin })).json[0]).toMatchObject({
      tls_mode: 'manual',
      certificate: { source: 'manual' },
    })
    await screenshot(page, 'certificates')
  })

  it('bans a range from the Security screen', async () => {
    await page.getByRole('link', { name: 'Security' }).click()
    await page.getByLabel('Address or range to ban').fill('198.51.100.240/29')
    await page.getByLabel('Duration of the ban').fill('2h')
    await page.getByRole('button', { name: 'Ban', exact: true }).click()
    await expectVisible(page.getByText('198.51.100.240/29 banned for 2h'))
    await expect.poll(async () => (await decisionsFor(cs, '198.51.100.241')).map((d) => d.origin), { timeout: 10_000 }).toEqual(['panel'])
    await expectVisible(page.getByRole('cell', { name: '198.51.100.240/29', exact: true }).first())
  })

  it('unbans one decision and an IP from the Security screen', async () => {
    await page.getByRole('link', { name: 'Security' }).click()
    await page.getByRole('button', { name: `Unban ${BANNED_ONE}` }).click()
    await expectVisible(page.getByText(`Decision for ${BANNED_ONE} removed.`))
    await expect.poll(async () => (await decisionsFor(cs, BANNED_ONE)).length, { timeout: 10_000 }).toBe(0)

    await page.getByLabel('IP address to unban').fill(BANNED_TWO)
    await page.getByRole('button', { name: 'Unban IP' }).click()
    await expectVisible(page.getByText(`${BANNED_TWO}: 1 decision(s) removed.`))
    expect(await decisionsFor(cs, BANNED_TWO)).toEqual([])
    // The list reloads after the message shows: wait for the row to go.
    await page.getByRole('button', { name: `Unban ${BANNED_TWO}` }).waitFor({ state: 'detached' })
    await page.getByRole('button', { name: `Unban ${BANNED_ONE}` }).waitFor({ state: 'detached' })

    await page.getByLabel('Address or CIDR to whitelist').fill('192.0.2.10')
    await page.getByLabel('Whitelist reason').fill('office')
    await page.getByRole('button', { name: 'Add to whitelist' }).click()
    await expectVisible(page.getByRole('button', { name: 'Remove 192.0.2.10 from the whitelist' }))

    await page.getByRole('checkbox', { name: 'Scenario crowdsecurity/http-probing enabled' }).uncheck()
    await expectVisible(page.getByText('crowdsecurity/http-probing disabled: reload the engine to apply.'))
    expect((await stack.panel.request('/api/security/scenarios', { cookie: stack.admin })).json.disabled_count).toBe(1)
  })

  it('runs a country expansion and the progress bar reaches completed', async () => {
    await page.getByLabel('Country', { exact: true }).fill('Luxembourg')
    await page.getByLabel('Ban duration').fill('1h')
    await page.getByRole('button', { name: 'Ban country' }).click()
    const bar = page.getByRole('progressbar', { name: 'Country ban progress of LU' })
    await expectVisible(bar)
    await expectVisible(page.getByText('completed', { exact: true }).first(), 30_000)
    expect(await bar.getAttribute('value')).toBe('100')
    await expectVisible(page.getByRole('button', { name: 'Revoke ban of LU' }))
    expect((await decisionsFor(cs, '5.0.1.7')).map((d) => d.origin)).toEqual(['panel-country-LU'])
    await screenshot(page, 'security')
  })

  it('shows a request made during the test in the live tail, with the filter kept', async () => {
    await page.getByRole('link', { name: 'Logs' }).click()
    // The Security screen has "path-traversal" scenario checkboxes: match the
    // Logs field exactly, once the Logs screen is the one showing.
    await page.waitForURL(/\/logs/)
    await page.getByLabel('Path', { exact: true }).fill('/live-tail-probe')
    await page.getByRole('button', { name: 'Apply filters' }).click()
    await page.waitForURL(/path=(%2F|\/)live-tail-probe/)
    await page.getByRole('button', { name: 'Live tail' }).click()
    await expectVisible(page.getByRole('status').filter({ hasText: 'live' }))
    await through('/not-matching-the-filter')
    await through('/live-tail-probe?x=1')
    await expectVisible(page.getByText(`GET ${DOMAIN}/live-tail-probe`), 30_000)
    await expect.poll(() => page.getByText('/not-matching-the-filter').count()).toBe(0)
    await page.getByRole('button', { name: 'Stop live tail' }).click()
    await page.getByRole('button', { name: 'Clear filters' }).click()
    await page
      .getByRole('row', { name: /^Log row \d+$/ })
      .first()
      .click()
    await expectVisible(page.getByRole('heading', { name: 'Raw line' }))
    await screenshot(page, 'logs')
  })

  it('takes screenshots of the other main screens with real data', async () => {
    for (let i = 0; i < 5; i++) await through(`/page-${i}`)
    await httpRequest({ port: stack.httpPort, host: 'unknown.example.test', path: '/' })
    await page.getByRole('link', { name: 'Dashboard' }).click()
    await expectVisible(page.getByRole('img', { name: /^Requests per hour by status class/ }))
    await expectVisible(page.getByRole('img', { name: /^World map of attackers: Germany \d+/ }))
    // Refusals by reason, in the host form's words (not the API's lan_only).
    await expectVisible(page.getByRole('img', { name: /^LAN only: [1-9]\d*$/ }))
    await screenshot(page, 'dashboard')
    await page.getByRole('link', { name: 'Hosts', exact: true }).click()
    await expectVisible(page.getByRole('link', { name: DOMAIN }))
    await page.getByLabel('Search hosts').fill('nothing-like-this')
    await expectVisible(page.getByText('No host matches this search.'))
    await page.getByLabel('Search hosts').fill('app.example')
    await expectVisible(page.getByRole('link', { name: DOMAIN }))
    await page.getByLabel('Search hosts').fill('')
    await screenshot(page, 'hosts')
    await page.setViewportSize({ width: 390, height: 844 })
    await screenshot(page, 'hosts-phone')
    await page.setViewportSize({ width: 1280, height: 900 })
    await page.getByRole('link', { name: 'DNS providers' }).click()
    const token = 'ui-test-dns-token-0123456789abcdefghijklmn'
    registerTestSecret(token)
    await page.getByRole('button', { name: 'Configure Cloudflare' }).click()
    await page.getByLabel('API token (Zone:Read and DNS:Edit)').fill(token)
    await page.getByRole('button', { name: 'Save Cloudflare' }).click()
    await expectVisible(page.getByText('Cloudflare saved.'))
    // Saved again without touching the secret: __UNCHANGED__ keeps it; it is never shown.
    await page.getByRole('button', { name: 'Configure Cloudflare' }).click()
    expect(await page.getByLabel('API token (Zone:Read and DNS:Edit)').inputValue()).toBe('')
    await page.getByRole('button', { name: 'Save Cloudflare' }).click()
    await expectVisible(page.getByText('Cloudflare saved.'))
    expect((await stack.panel.request('/api/dns-providers/provider_a', { cookie: stack.admin })).json).toMatchObject({
      configured: true,
      enabled: true,
    })
    expect(await page.content()).not.toContain(token)
    await screenshot(page, 'dns-providers')

    // The host form offers only valid TLS choices: a wildcard with ACME gets DNS-01 only,
    // and only providers that are enabled and configured.
    await page.goto(`${base}/hosts/new`)
    await page.getByLabel('Domain', { exact: true }).fill('*.wild.example.test')
    const options = (label: string) => page.getByLabel(label).locator('option').allTextContents()
    expect(await options('ACME challenge')).toEqual(['DNS-01'])
    expect(await options('DNS provider')).toEqual(['Cloudflare'])
    await page.getByLabel('Domain', { exact: true }).fill('plain.example.test')
    expect(await options('ACME challenge')).toEqual(['HTTP-01', 'TLS-ALPN-01', 'DNS-01'])
    await page.getByRole('link', { name: 'Settings' }).click()
    await page.getByLabel('New user email').fill(VIEWER.email)
    await page.getByLabel('Password (12+ characters)').fill(VIEWER.password)
    await page.getByRole('button', { name: 'Add user' }).click()
    await expectVisible(page.getByText(`User ${VIEWER.email} created.`))
    await page.getByRole('button', { name: 'Add channel' }).click()
    await page.getByLabel('Channel name').fill('ops webhook')
    await page.getByLabel('Webhook URL').fill(`${upstream.url}/hook`)
    await page.getByRole('button', { name: 'Save channel' }).click()
    await page.getByRole('button', { name: 'Send a test through ops webhook' }).click()
    await expectVisible(page.getByText('Test message sent through ops webhook.'))
    expect(upstream.requests.some((r) => r.method === 'POST' && r.url === '/hook')).toBe(true)
    await page.getByRole('button', { name: 'Add rule' }).click()
    await page.getByLabel('Rule name').fill('failures')
    await page.getByRole('checkbox', { name: 'Backup failed' }).check()
    await page.getByRole('checkbox', { name: 'ops webhook' }).check()
    await page.getByRole('button', { name: 'Save rule' }).click()
    await expectVisible(page.getByRole('button', { name: 'Edit rule failures' }))
    await page.getByRole('button', { name: 'Create backup now' }).click()
    await expectVisible(page.getByText(/^Backup .* created\.$/))
    await screenshot(page, 'settings')

    // Last admin step: delete the uploaded certificate, reverting the host to no TLS.
    await page.getByRole('link', { name: 'Certificates' }).click()
    await page.getByLabel(`TLS mode after deleting the certificate of ${DOMAIN}`).selectOption('none')
    await page.getByRole('button', { name: `Delete certificate of ${DOMAIN}` }).click()
    await expectVisible(page.getByText(`Certificate of ${DOMAIN} deleted.`))
    expect((await stack.panel.request('/api/hosts', { cookie: stack.admin })).json[0]).toMatchObject({
      tls_mode: 'none',
      certificate: null,
    })
    expect((await through('/after-revert')).status).toBe(200)
  })

  it('configures the RFC 2136 provider through its form, and shows a failed ACME attempt with its cause on the hosts, the host and the certificates screens', async () => {
    const secret = 'SECRETuiTsig0123456789abcdefghijklmnopqrstu='
    registerTestSecret(secret)
    const name = 'RFC 2136 dynamic update (BIND, Knot, PowerDNS)'
    await page.getByRole('link', { name: 'DNS providers' }).click()
    await page.getByRole('button', { name: `Configure ${name}` }).click()
    await page.getByLabel('Primary server accepting updates (host:port)').fill('127.0.0.1:9')
    await page.getByLabel('TSIG key name').fill('acme-update')
    expect(await page.getByLabel('TSIG algorithm').locator('option').allTextContents()).toEqual([
      'hmac-sha256',
      'hmac-sha384',
      'hmac-sha512',
      'hmac-sha224',
      'hmac-sha1',
    ])
    await page.getByLabel('TSIG algorithm').selectOption('hmac-sha512')
    await page.getByLabel('TSIG secret (base64)').fill(secret)
    await page.getByRole('button', { name: `Save ${name}` }).click()
    await expectVisible(page.getByText(`${name} saved.`))
    expect((await stack.panel.request('/api/dns-providers/provider_c', { cookie: stack.admin })).json).toMatchObject({
      enabled: true,
      configured: true,
    })
    expect(await page.content()).not.toContain(secret)

    // A DNS-01 host whose CA does not answer (a loopback port where nothing listens): the order fails at once.
    const group = (await stack.panel.request('/api/target-groups', { cookie: stack.admin })).json[0]
    const host = await stack.panel.request('/api/hosts', {
      method: 'POST',
      cookie: stack.admin,
      body: {
        domain: 'dns01.example.test',
        target_group_id: group.id,
        tls_mode: 'auto',
        tls_challenge: 'dns',
        tls_dns_provider: 'provider_c',
        tls_acme_ca_url: 'https://127.0.0.1:9/dir',
      },
    })
    expect(host.status).toBe(201)
    await eventually(
      async () => (await stack.panel.request(`/api/hosts/${host.json.id}`, { cookie: stack.admin })).json.certificate?.last_failure,
      (f) => !!f,
      30_000,
      300,
    )
    // The proxy's message is cleaned up (no "[name] " prefix, no order and CA URLs glued on) and
    // its cause names the directory and what to check; each screen keeps words apart (the issue
    // saw "tls.localhostcould not get…").
    const failure = (await stack.panel.request(`/api/hosts/${host.json.id}`, { cookie: stack.admin })).json.certificate.last_failure
    expect(failure).toMatchObject({ name: 'dns01.example.test', operation: 'obtain', kind: 'ca_unreachable' })
    expect(failure.cause).toMatch(
      /^the ACME CA could not be reached: connection refused \(at https:\/\/127\.0\.0\.1:9\/[^)]*\); check the ACME directory URL/,
    )
    expect(failure.error).toMatch(/connection refused$/)
    expect(failure.error).not.toMatch(/^\[|\((?:ca|order)=/)
    const said = `${failure.cause}. The proxy's message: ${failure.error}`
    await page.getByRole('link', { name: 'Hosts', exact: true }).click()
    await expectVisible(page.getByText('acme: obtain failed'))
    await page.getByRole('link', { name: 'Certificates' }).click()
    await expectVisible(page.getByRole('heading', { name: 'Failed ACME attempts' }))
    const failedRow = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'dns01.example.test' }) })
    expect(await failedRow.getByRole('cell').nth(3).textContent()).toBe(said)
    await screenshot(page, 'certificates-failed')
    await page.getByRole('link', { name: 'dns01.example.test' }).click()
    const alert = page
      .getByRole('alert')
      .filter({ hasText: /The last attempt to obtain the certificate for dns01\.example\.test failed at / })
    await expectVisible(alert)
    const at = `${new Date(failure.at).toISOString().replace('T', ' ').slice(0, 19)} UTC`
    expect((await alert.textContent())!.replace(/\s+/g, ' ').trim()).toBe(
      `The last attempt to obtain the certificate for dns01.example.test failed at ${at}: ${said}`,
    )
    // The Logs screen's row of the same line: the name, a space, then Caddy's message.
    await page.goto(`${base}/logs?host_domain=dns01.example.test&source=caddy_error`)
    const logRequest = page.getByRole('table', { name: 'Log rows' }).locator('tbody tr td:nth-child(4)')
    await expect
      .poll(() => logRequest.allTextContents(), { timeout: 15_000 })
      .toContainEqual(expect.stringMatching(/^dns01\.example\.test could not get certificate from issuer$/))
    expect((await stack.panel.request(`/api/hosts/${host.json.id}`, { method: 'DELETE', cookie: stack.admin })).status).toBe(204)
  })

  it('a viewer sees no mutation controls and gets 403 when forcing one', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL(/\/login/)
    await page.getByLabel('Email').fill(VIEWER.email)
    await page.getByLabel('Password').fill(VIEWER.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await expectVisible(page.getByRole('heading', { name: 'Dashboard' }))
    await page.getByRole('link', { name: 'Hosts', exact: true }).click()
    await expectVisible(page.getByRole('link', { name: DOMAIN }))
    await expectHidden(page.getByRole('link', { name: 'Add host' }))
    expect(await page.getByRole('checkbox', { name: `Enabled: ${DOMAIN}` }).isDisabled()).toBe(true)
    await page.getByRole('link', { name: DOMAIN }).click()
    await expectVisible(page.getByLabel('Domain', { exact: true }))
    await expectHidden(page.getByRole('button', { name: 'Save host' }))
    await expectHidden(page.getByRole('button', { name: 'Delete host' }))
    await page.getByRole('link', { name: 'Security' }).click()
    await expectVisible(page.getByRole('heading', { name: 'Decisions' }))
    await expectVisible(page.getByRole('cell', { name: 'Luxembourg (LU)' }))
    await expectVisible(page.getByRole('cell', { name: '192.0.2.10' }))
    await expectHidden(page.getByRole('button', { name: 'Unban IP' }))
    await expectHidden(page.getByRole('button', { name: 'Ban country' }))
    await expectHidden(page.getByRole('button', { name: /^Revoke ban of/ }))
    // Forcing a mutation with the viewer's own session cookie.
    const hostId = (await stack.panel.request('/api/hosts', { cookie: stack.admin })).json[0].id
    const forced = await chrome.browser.request.post(`${base}/api/hosts/${hostId}/toggle`)
    expect(forced.status()).toBe(403)
    expect((await forced.json()).error).toMatch(/viewer/)
  })

  it('logged no console error in the whole run', () => {
    expect(consoleErrors).toEqual([])
  })
})

async function expectVisible(locator: ReturnType<Page['getByRole']>, timeout = 15_000) {
  await locator.waitFor({ state: 'visible', timeout })
}
async function expectHidden(locator: ReturnType<Page['getByRole']>) {
  expect(await locator.count()).toBe(0)
}
