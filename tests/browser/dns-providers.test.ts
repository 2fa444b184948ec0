import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { DNS_PROVIDER_CATALOGUE } from '../../server/utils/hosts/dns-catalogue'
import { registerTestSecret } from '../support/panel'
import { startProxyStack, type ProxyStack } from '../support/proxy-stack'
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
})
