import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { startPanel, type PanelHandle } from '../support/panel'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, screenshot, signInAsAdmin } from './browser'

// The single sign-on part of the Settings screen in Chromium against the built panel: the groups
// claim, the roles by group (rows of a group and a role) and the groups allowed to sign in,
// saved through the API, a refusal placed at its field; the login page's words for a sign-in the
// groups refused. axe in both themes and widths.

let panel: PanelHandle
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
const consoleErrors: string[] = []

beforeAll(async () => {
  panel = await startPanel({ env: { PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
}, 60_000)
afterAll(async () => {
  await chrome?.close()
  await panel?.stop()
})

const settingsOf = async (cookie: string) => (await panel.request('/api/settings', { cookie })).json

describe('OIDC groups on the Settings screen', () => {
  it('the login page says in words why the groups refused a sign-in', async () => {
    await page.goto(`${panel.url}/login?oidc_error=group_refused`)
    await page.getByRole('alert').filter({ hasText: 'One of your groups at the identity provider has no access to this panel.' }).waitFor()
    await page.goto(`${panel.url}/login?oidc_error=group_not_allowed`)
    await page.getByRole('alert').filter({ hasText: 'Your account is not in a group allowed to sign in to this panel.' }).waitFor()
    expect(await axeProblemsInBothThemesAndWidths(page, 'login refused by groups')).toEqual([])
  })

  it('edits the claim, the roles by group and the allowed groups; a bad group is refused at its field', async () => {
    const admin = await panel.login()
    await signInAsAdmin(page, panel.url)
    await page.goto(`${panel.url}/settings`)
    const sso = page.getByRole('group', { name: 'Single sign-on (OIDC)' })
    await sso.waitFor()
    await sso.getByText('No groups mapped').waitFor()

    await sso.getByLabel('Groups claim').fill('realm_access.roles')
    await sso.getByRole('button', { name: 'Add a group' }).click()
    await sso.getByLabel('Group 1', { exact: true }).fill('panel-admins')
    await sso.getByLabel('Role of group 1').selectOption({ label: 'Administrator' })
    await sso.getByRole('button', { name: 'Add a group' }).click()
    await sso.getByLabel('Group 2', { exact: true }).fill('suspended')
    await sso.getByLabel('Role of group 2').selectOption({ label: 'No access' })
    await sso.getByLabel('Groups allowed to sign in').fill('family\nstaff members\n')
    await page.getByRole('button', { name: 'Save settings' }).click()
    await page.getByText('Settings saved.').waitFor()
    expect(await settingsOf(admin)).toMatchObject({
      'oidc.groups_claim': 'realm_access.roles',
      'oidc.group_roles': { 'panel-admins': 'admin', suspended: 'none' },
      'oidc.allowed_groups': ['family', 'staff members'],
    })
    await screenshot(page, 'settings-oidc-groups')

    // A group name with a comma: the API refuses it, the form shows why at the mapping and changes nothing.
    await sso.getByRole('button', { name: 'Add a group' }).click()
    await sso.getByLabel('Group 3', { exact: true }).fill('a,b')
    await page.getByRole('button', { name: 'Save settings' }).click()
    await sso.getByText('Roles by group: group "a,b" must not contain commas or control characters').waitFor()
    await expect.poll(() => sso.getByLabel('Group 1', { exact: true }).getAttribute('aria-invalid')).toBe('true')
    expect((await settingsOf(admin))['oidc.group_roles']).toEqual({ 'panel-admins': 'admin', suspended: 'none' })
    expect(await axeProblemsInBothThemesAndWidths(page, 'settings with a refused group')).toEqual([])

    // After a reload the rows come from the panel; removing one saves the smaller mapping.
    await page.reload()
    await sso.getByLabel('Group 2', { exact: true }).waitFor()
    expect(await sso.getByLabel('Group 2', { exact: true }).inputValue()).toBe('suspended')
    expect(await sso.getByLabel('Groups allowed to sign in').inputValue()).toBe('family\nstaff members')
    await sso.getByRole('button', { name: 'Remove group 2 (suspended)' }).click()
    await page.getByRole('button', { name: 'Save settings' }).click()
    await page.getByText('Settings saved.').waitFor()
    expect((await settingsOf(admin))['oidc.group_roles']).toEqual({ 'panel-admins': 'admin' })
    expect(await axeProblemsInBothThemesAndWidths(page, 'settings single sign-on')).toEqual([])
    // The one refusal (the comma) is the scenario; nothing else went wrong.
    expect(consoleErrors).toEqual([expect.stringMatching(/status of 400 \(Bad Request\) @ http:\/\/127\.0\.0\.1:\d+\/api\/settings$/)])
  })
})
