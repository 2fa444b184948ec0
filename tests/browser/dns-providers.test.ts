import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { DNS_PROVIDER_CATALOGUE } from '../../server/utils/hosts/dns-catalogue'
import { registerTestSecret } from '../support/panel'
import { freePort, unusedPort } from '../support/ports'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, screenshot, signInAsAdmin } from './browser'

// The DNS providers screen with the vendor providers (issue 39): one card per
// catalogue entry, each form drawn from its field descriptors; a malformed
// token is refused in words naming the field (nothing stored), a well-formed
// one is saved, pushed to the production Caddy, and never shown again.

const TOKEN = 'SECRETbrowserHetzner0123456789ab'
registerTestSecret(TOKEN)

let stack: ProxyStack
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const consoleErrors: string[] = []

beforeAll(async () => {
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  await signInAsAdmin(page, stack.panel.url)
}, 90_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
})

describe('DNS providers screen', () => {
  it('a card per provider; Hetzner refused with a malformed token, then saved with a good one that is never shown', async () => {
    await page.goto(`${stack.panel.url}/dns-providers`)
    await page.getByRole('heading', { name: 'DNS providers', level: 1 }).waitFor()
    for (const p of DNS_PROVIDER_CATALOGUE) await page.getByRole('region', { name: p.display_name, exact: true }).waitFor()
    expect(await axeProblemsInBothThemesAndWidths(page, 'DNS providers')).toEqual([])

    await page.getByRole('button', { name: 'Configure Hetzner DNS' }).click()
    const field = page.getByLabel('DNS Console API token')
    await field.fill('not-a-hetzner-token')
    await page.getByRole('button', { name: 'Save Hetzner DNS' }).click()
    await page
      .getByText('credentials.auth_api_token: must be a Hetzner DNS Console API token: 32 letters and digits, as dns.hetzner.com shows it')
      .waitFor()
    expect((await stack.panel.request('/api/dns-providers/hetzner', { cookie: stack.admin })).json).toMatchObject({ configured: false })
    expect(await axeProblemsInBothThemesAndWidths(page, 'DNS providers, Hetzner form with an error')).toEqual([])

    await field.fill(TOKEN)
    await page.getByRole('button', { name: 'Save Hetzner DNS' }).click()
    await page.getByText('Hetzner DNS saved.').waitFor()
    expect((await stack.panel.request('/api/dns-providers/hetzner', { cookie: stack.admin })).json).toMatchObject({
      configured: true,
      enabled: true,
      proxy_module: 'dns.providers.hetzner',
    })
    // Opened again: the stored token is not sent back, the field says how to keep it.
    await page.getByRole('button', { name: 'Configure Hetzner DNS' }).click()
    expect(await page.getByLabel('DNS Console API token').inputValue()).toBe('')
    expect(await page.getByLabel('DNS Console API token').getAttribute('placeholder')).toBe('•••••• stored: leave empty to keep')
    expect(await page.content()).not.toContain(TOKEN)
    await screenshot(page, 'dns-providers-vendors')
    expect(consoleErrors.filter((e) => !e.includes('400'))).toEqual([])
  })

  it("a host whose provider delegates: the host screen shows the CNAME to create and the lookup's answer", async () => {
    // RFC 2136 at a loopback port where nothing listens: the lookup goes there (the provider's
    // own server) and fails at once, so nothing leaves the machine.
    const server = `127.0.0.1:${await unusedPort()}`
    const key = Buffer.from('SECRETbrowserTsigKey0123456789ab').toString('base64')
    registerTestSecret(key)
    const put = await stack.panel.request('/api/dns-providers/provider_c', {
      method: 'PUT',
      cookie: stack.admin,
      body: {
        enabled: true,
        credentials: {
          server,
          key_name: 'acme',
          key_alg: 'hmac-sha256',
          key,
          zone: 'example.net',
          challenge_delegation: 'acme.example.net',
        },
      },
    })
    expect(put.status).toBe(200)
    const group = await createGroup(stack, { name: 'g', targets: [{ address: '127.0.0.1:9' }] })
    const host = await createHost(stack, {
      domain: 'shop.example.test',
      target_group_id: group.id,
      tls_mode: 'auto',
      tls_challenge: 'dns',
      tls_dns_provider: 'provider_c',
      tls_acme_ca_url: `https://127.0.0.1:${await freePort()}/dir`,
    })
    expect(host.status).toBe(201)
    await page.goto(`${stack.panel.url}/hosts/${host.json.id}`)
    const panel = page.getByRole('region', { name: 'Challenge delegation' })
    await panel.getByText('_acme-challenge.shop.example.test. CNAME shop.example.test.acme.example.net.').waitFor()
    await panel.getByText('not in place').waitFor()
    await panel.getByText('the lookup failed').waitFor()
    expect(await axeProblemsInBothThemesAndWidths(page, 'Host with a delegated DNS challenge')).toEqual([])
    await panel.getByRole('button', { name: 'Check the records again' }).click()
    await panel.getByText('not in place').waitFor()
    expect(await page.content()).not.toContain(key)
  })

  it('the form shows the stored delegation zone so a save keeps it; "Test" runs the check through the proxy and shows its steps in words', async () => {
    const name = 'RFC 2136 dynamic update (BIND, Knot, PowerDNS)'
    await page.goto(`${stack.panel.url}/dns-providers`)
    const card = page.getByRole('region', { name, exact: true })
    await card.getByRole('button', { name: `Configure ${name}` }).click()
    const delegation = card.getByLabel(/^Delegation zone/)
    expect(await delegation.inputValue()).toBe('acme.example.net')
    await card.getByRole('button', { name: `Save ${name}` }).click()
    await page.getByText(`${name} saved.`).waitFor()
    expect((await stack.panel.request('/api/dns-providers/provider_c', { cookie: stack.admin })).json).toMatchObject({
      configured: true,
      challenge_delegation: 'acme.example.net',
    })

    // The provider's server is a loopback port where nothing listens: the real proxy's check fails in words, at once.
    const last = card.getByRole('group', { name: `Last test of ${name}` })
    await last.getByText('Not tested since its credentials were saved.').waitFor()
    await last.getByRole('button', { name: `Test ${name}` }).click()
    await last.getByLabel('Zone the provider manages').fill('example.net')
    await last.getByLabel(/^Host whose challenge is delegated/).fill('shop.example.test')
    await last.getByRole('button', { name: `Run the test of ${name}` }).click()
    await page.getByText(`${name}: the test failed; its steps say where.`).waitFor()
    await last.getByText('test failed', { exact: true }).waitFor()
    await last.getByText('record shop.example.test.acme.example.net for shop.example.test', { exact: false }).waitFor()
    const check = (await stack.panel.request('/api/dns-providers/provider_c', { cookie: stack.admin })).json.last_check
    expect(check).toMatchObject({ ok: false, zone: 'example.net', host: 'shop.example.test' })
    const failed = check.steps.find((s: any) => !s.ok)
    await last.getByText(failed.detail).waitFor()
    expect(await axeProblemsInBothThemesAndWidths(page, 'DNS providers, a failed test with its steps')).toEqual([])
    await screenshot(page, 'dns-providers-test')
  })
})
