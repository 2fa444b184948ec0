import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { generateTsigKey, startBind, type BindHandle } from '../support/bind'
import { registerTestSecret } from '../support/panel'
import { freePort } from '../support/ports'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, screenshot, signInAsAdmin } from './browser'

// The host screen's box with its DNS provider's last check (issue 39 item 3),
// against the real BIND and the production Caddy: the host is created while the
// panel's TSIG key is one BIND does not know, so the automatic check failed; the
// box says where, in words; saving the host back onto DNS-01 in the form checks
// again and shows it. Once BIND knows the key, "Check now" passes.

const ZONE = 'example.test'
const PANEL_KEY = generateTsigKey('acme-key')
const SERVER_KEY = generateTsigKey('acme-key')
registerTestSecret(PANEL_KEY.secret, SERVER_KEY.secret)

let bind: BindHandle
let stack: ProxyStack
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const consoleErrors: string[] = []

beforeAll(async () => {
  bind = await startBind({ zones: [{ name: ZONE, policy: ['grant acme-key zonesub TXT'] }], keys: [SERVER_KEY] })
  stack = await startProxyStack({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '', PANEL_DNS_AUTO_CHECK: 'on' } })
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  await signInAsAdmin(page, stack.panel.url)
}, 90_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await bind?.stop()
})

describe('the DNS provider check on the host screen', () => {
  it('shows the failed check of the host creation in words, and "Check now" passes once BIND knows the key', async () => {
    const put = await stack.panel.request('/api/dns-providers/provider_c', {
      method: 'PUT',
      cookie: stack.admin,
      body: {
        enabled: true,
        credentials: { server: bind.address, key_name: PANEL_KEY.name, key_alg: PANEL_KEY.algorithm, key: PANEL_KEY.secret, zone: ZONE },
      },
    })
    expect(put.status).toBe(200)
    const group = await createGroup(stack, { name: 'g', targets: [{ address: '127.0.0.1:9' }] })
    const host = await createHost(stack, {
      domain: `shop.${ZONE}`,
      target_group_id: group.id,
      tls_mode: 'auto',
      tls_challenge: 'dns',
      tls_dns_provider: 'provider_c',
      tls_acme_ca_url: `https://127.0.0.1:${await freePort()}/dir`,
    })
    expect([host.status, host.json.dns_check.state]).toEqual([201, 'failed'])

    await page.goto(`${stack.panel.url}/hosts/${host.json.id}`)
    const box = page.getByRole('region', { name: 'DNS provider check' })
    await box.getByText('check failed', { exact: true }).waitFor()
    await box
      .getByRole('alert')
      .getByText(/failed its check at its credentials: authentication refused/)
      .waitFor()
    await box.getByText('Credentials:', { exact: true }).waitFor()
    // When, as a date for people, not the stored timestamp.
    expect(await box.textContent()).not.toContain(host.json.dns_check.last_check.at)
    expect(await axeProblemsInBothThemesAndWidths(page, 'Host with a failed DNS provider check')).toEqual([])
    await screenshot(page, 'dns-host-check-failed')

    // Through the form: off DNS-01 and back is a new first order, so the save checks again and the box shows that result.
    const challenge = page.getByLabel('ACME challenge')
    await challenge.selectOption({ label: 'HTTP-01' })
    await page.getByRole('button', { name: 'Save host' }).click()
    await page.getByText('Host saved and applied to the proxy.').waitFor()
    await box.waitFor({ state: 'detached' })
    await challenge.selectOption({ label: 'DNS-01' })
    await page.getByRole('button', { name: 'Save host' }).click()
    await page.getByText('Host saved and applied to the proxy.').waitFor()
    await box.getByText('check failed', { exact: true }).waitFor()
    const again = (await stack.panel.request('/api/dns-providers/provider_c', { cookie: stack.admin })).json.last_check
    expect(again.at > host.json.dns_check.last_check.at).toBe(true)

    await bind.setKeys([PANEL_KEY])
    await box.getByRole('button', { name: 'Check now' }).click()
    await box.getByText('check passed', { exact: true }).waitFor()
    await box.getByText(/passed its check: a TXT record was written in example\.test, seen at its servers and removed/).waitFor()
    await box.getByText('Remove the TXT record:', { exact: true }).waitFor()
    expect(await box.getByRole('alert').count()).toBe(0)
    expect(await axeProblemsInBothThemesAndWidths(page, 'Host with a passed DNS provider check')).toEqual([])
    await screenshot(page, 'dns-host-check-passed')
    const content = await page.content()
    for (const secret of [PANEL_KEY.secret, SERVER_KEY.secret]) expect(content).not.toContain(secret)
    expect(consoleErrors).toEqual([])
  })
})
