import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { panelEnvFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { writeMmdb } from '../support/mmdb-writer'
import { axeProblemsInBothThemesAndWidths, firstPage, launchChromium, PHONE, DESK, signInAsAdmin } from './browser'

// Who and where may enter a host, in the web UI (docs/access-control.md, docs/ui.md "Host"): the
// geo rules editor of the host and of a path rule, their preview over past traffic (access rows
// seeded into the stack's database, so the figures are real answers of the replay), the lockout
// warning, "who may enter" of a host behind the panel's login, and the country ban's preview on
// the Security screen; in Chromium against the built panel, the production Caddy and the engine.

const HOST = 'geo-ui.example.test'

let cs: CrowdsecHandle
let stack: ProxyStack
let up: TestUpstream
let chrome: { browser: BrowserContext; close(): Promise<void> }
let page: Page
let hostId: number
let ruleId: number
let aliceId: number
let officeId: number
const consoleErrors: string[] = []

/** Access rows of the last hour: [count, address, country, asn, path, rule]. */
function seedRows(): Array<[number, string, string | null, number | null, string, number | null]> {
  return [
    [3, '203.0.113.10', 'CN', 4134, '/login', null],
    [2, '203.0.113.11', 'CN', 4134, '/login', null],
    [4, '192.0.2.20', 'FR', 3215, '/', null],
    [1, '10.0.0.5', null, null, '/', null],
    [2, '192.0.2.21', 'FR', 3215, '/admin/x', ruleId],
    [1, '203.0.113.12', 'CN', 4134, '/admin/x', ruleId],
  ]
}

beforeAll(async () => {
  up = await startTestUpstream()
  cs = await startCrowdsec({ agent: false })
  stack = await startProxyStack({ env: { ...panelEnvFor(cs), PANEL_DOMAIN: '127.0.0.1', PANEL_PUBLIC_URL: '' } })
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const res = await createHost(stack, { domain: HOST, target_group_id: group.id })
  expect(res.status, res.text).toBe(201)
  hostId = res.json.id
  const rule = await stack.panel.request(`/api/hosts/${hostId}/rules`, {
    method: 'POST',
    cookie: stack.admin,
    body: { path: '/admin/*', action: 'proxy' },
  })
  expect(rule.status, rule.text).toBe(201)
  ruleId = rule.json.id
  const list = await stack.panel.request('/api/access-lists', {
    method: 'POST',
    cookie: stack.admin,
    body: { name: 'office', ip_rules: [{ action: 'allow', source: '198.51.100.0/24' }] },
  })
  expect(list.status, list.text).toBe(201)
  officeId = list.json.id
  const alice = await stack.panel.request('/api/users', {
    method: 'POST',
    cookie: stack.admin,
    body: { email: 'alice@example.test', name: 'Alice', password: 'alice-password-123', role: 'viewer' },
  })
  expect(alice.status, alice.text).toBe(201)
  aliceId = alice.json.id
  const ts = Date.now() - 3_600_000
  for (const [count, ip, country, asn, path, rid] of seedRows())
    for (let i = 0; i < count; i++)
      await stack.panel.db().execute({
        sql: `INSERT INTO logs (ts_ms, source, host_id, host_domain, rule_id, status, method, path, remote_ip, country, asn)
                VALUES (?, 'caddy_access', ?, ?, ?, 200, 'GET', ?, ?, ?, ?)`,
        args: [ts + i, hostId, HOST, rid, path, ip, country, asn],
      })
  chrome = await launchChromium()
  page = await firstPage(chrome, consoleErrors)
  page.on('dialog', (d) => d.accept())
  await signInAsAdmin(page, stack.panel.url)
}, 180_000)
afterAll(async () => {
  await chrome?.close()
  await stack?.stop()
  await cs?.stop()
  await up?.stop()
})

const hostGeo = () => page.getByTestId('host-geo')
const geoRule = (scope: Locator, i: number) => scope.getByTestId(`geo-rule-${i}`)
const storedHost = async () => (await stack.panel.request(`/api/hosts/${hostId}`, { cookie: stack.admin })).json
/** The figure of one line of a preview's table ("Requests that would be refused" → "6"). */
const figure = async (preview: Locator, line: string) =>
  (
    await preview
      .getByRole('row', { name: new RegExp(`^${line} [\\d,]+$`) })
      .getByRole('cell')
      .textContent()
  )?.trim()
async function openHost() {
  await page.goto(`${stack.panel.url}/hosts/${hostId}`)
  await page.getByRole('heading', { name: HOST }).waitFor()
  await hostGeo().waitFor()
}
async function saveHost() {
  await page.getByRole('button', { name: 'Save host' }).click()
  await page.getByText('Host saved and applied to the proxy.').waitFor()
}

describe('geo rules of a host', () => {
  it('rules built with the pickers by name are tried against past traffic, saved, and there after a reload', async () => {
    await openHost()
    const geo = hostGeo()
    await geo.getByLabel('Limit who may enter by country, network or address').check()
    const first = geoRule(geo, 0)
    await first.getByLabel('Rule 1 does').selectOption('deny')
    // A name that is no country is refused at the field, nothing added.
    await first.getByLabel('Countries of rule 1', { exact: true }).fill('Chin')
    await first.getByLabel('Countries of rule 1', { exact: true }).press('Enter')
    await first.getByText('"Chin" is no country').waitFor()
    await first.getByLabel('Countries of rule 1', { exact: true }).fill('China')
    await first.getByLabel('Countries of rule 1', { exact: true }).press('Enter')
    await first.getByRole('list', { name: 'Countries of rule 1' }).getByText('China').waitFor()
    await first.getByLabel('AS numbers of rule 1', { exact: true }).fill('AS4134')
    await first.getByRole('button', { name: 'Add to AS numbers of rule 1' }).click()
    await first.getByRole('list', { name: 'AS numbers of rule 1' }).getByText('AS4134').waitFor()
    // A second rule, put first and back again with the arrows.
    await geo.getByRole('button', { name: 'Add a geo rule' }).click()
    const second = geoRule(geo, 1)
    await second.getByLabel('Rule 2 does').selectOption('allow')
    await second.getByLabel('Europe').check()
    await second.getByLabel('Addresses of an access list (rule 2)').selectOption({ label: 'office' })
    await geo.getByRole('button', { name: 'Move rule 2 up' }).click()
    expect(await geoRule(geo, 0).getByLabel('Rule 1 does').inputValue()).toBe('allow')
    await geo.getByRole('button', { name: 'Move rule 1 down' }).click()
    expect(await geoRule(geo, 0).getByLabel('Rule 1 does').inputValue()).toBe('deny')
    await geo.getByLabel('Anyone no rule matches').selectOption('deny')

    // The preview: the seeded rows of this host, as the replay counts them.
    const preview = geo.getByTestId('access-preview')
    await preview.getByRole('button', { name: 'Try against the last 7 days' }).click()
    await preview.getByRole('table').first().waitFor()
    expect(await figure(preview, 'Requests')).toBe('13')
    expect(await figure(preview, 'Requests that would be refused')).toBe('6')
    expect(await figure(preview, 'Addresses that would be refused')).toBe('3')
    expect(await preview.getByRole('table', { name: 'Refused, by country' }).getByRole('row', { name: /China/ }).textContent()).toContain(
      '6',
    )
    expect(
      await preview
        .getByRole('table', { name: 'Refused, by network' })
        .getByRole('row', { name: /AS4134/ })
        .textContent(),
    ).toContain('6')
    expect(
      await preview
        .getByRole('table', { name: 'Refused, by path' })
        .getByRole('row', { name: /\/login/ })
        .textContent(),
    ).toContain('5')
    await preview.getByRole('img', { name: /Refused requests by country: China 6/ }).waitFor()
    expect(await preview.getByTestId('lockout').count()).toBe(0)
    // An edit clears the figures: they were for the rules as they were.
    await geo.getByLabel('Anyone no rule matches').selectOption('allow')
    await preview.getByRole('table').first().waitFor({ state: 'detached' })
    await geo.getByLabel('Anyone no rule matches').selectOption('deny')

    await saveHost()
    expect((await storedHost()).geo_policy).toEqual({
      rules: [
        { action: 'deny', countries: ['CN'], continents: [], asns: [4134], cidrs: [], access_list_id: null },
        { action: 'allow', countries: [], continents: ['EU'], asns: [], cidrs: [], access_list_id: officeId },
      ],
      default: 'deny',
      unknown_address: 'allow_lan',
    })
    await openHost()
    await geoRule(hostGeo(), 0).getByRole('list', { name: 'Countries of rule 1' }).getByText('China').waitFor()
    expect(await geoRule(hostGeo(), 1).getByLabel('Europe').isChecked()).toBe(true)
    expect(await hostGeo().getByLabel('Anyone no rule matches').inputValue()).toBe('deny')
  })

  it('a range the API refuses is shown at its field, and nothing changes', async () => {
    const before = await storedHost()
    await openHost()
    const ranges = geoRule(hostGeo(), 0).getByLabel('Addresses and ranges of rule 1 (one per line)')
    await ranges.fill('192.0.2.0/24\n300.1.1.1/99')
    await ranges.blur()
    await page.getByRole('button', { name: 'Save host' }).click()
    await geoRule(hostGeo(), 0)
      .getByText(/Geo rule 1 addresses and ranges: must be an IP address or a CIDR range/)
      .waitFor()
    expect(await ranges.getAttribute('aria-invalid')).toBe('true')
    expect((await storedHost()).geo_policy).toEqual(before.geo_policy)
    expect(consoleErrors.filter((e) => !/400/.test(e))).toEqual([])
    consoleErrors.length = 0
  })

  it("rules that would refuse the operator's own address say so before saving", async () => {
    await openHost()
    const geo = hostGeo()
    await geo.getByRole('button', { name: 'Add a geo rule' }).click()
    const third = geoRule(geo, 2)
    await third.getByLabel('Rule 3 does').selectOption('deny')
    await third.getByLabel('Addresses and ranges of rule 3 (one per line)').fill('127.0.0.0/8')
    await third.getByLabel('Addresses and ranges of rule 3 (one per line)').blur()
    for (const i of [3, 2]) await geo.getByRole('button', { name: `Move rule ${i} up` }).click()
    const preview = geo.getByTestId('access-preview')
    await preview.getByRole('button', { name: 'Try against the last 7 days' }).click()
    const warning = preview.getByTestId('lockout')
    await warning.waitFor()
    expect(await warning.textContent()).toContain('You would lock yourself out: your address 127.0.0.1 would be refused.')
    expect(await warning.getAttribute('role')).toBe('alert')
  })
})

describe('who may enter a host behind the panel login', () => {
  it('chosen users and groups are saved and shown again; the form with its new groups passes axe and is usable at 390 px', async () => {
    await openHost()
    await page.getByLabel('Require panel login (ForwardAuth)').check()
    const who = page.getByTestId('who-may-enter')
    await who.getByLabel('Only the users and groups chosen below').check()
    await who.getByLabel('Users who may enter', { exact: true }).fill('alice@example.test')
    await who.getByLabel('Users who may enter', { exact: true }).press('Enter')
    await who.getByRole('list', { name: 'Users who may enter' }).getByText('Alice <alice@example.test>').waitFor()
    await who.getByLabel('Groups who may enter', { exact: true }).fill('ops')
    await who.getByLabel('Groups who may enter', { exact: true }).press('Enter')
    await who.getByRole('list', { name: 'Groups who may enter' }).getByText('ops').waitFor()
    expect(await axeProblemsInBothThemesAndWidths(page, 'host form, geo rules and who may enter open')).toEqual([])

    // 390 px: nothing wider than the screen, the pickers still reachable.
    await page.setViewportSize(PHONE)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
    const countries = geoRule(hostGeo(), 0).getByLabel('Countries of rule 1', { exact: true })
    await countries.scrollIntoViewIfNeeded()
    const box = (await countries.boundingBox())!
    expect(box.x).toBeGreaterThanOrEqual(0)
    expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width)
    await page.setViewportSize(DESK)

    // The lockout rule of the case before was not saved: the form is reloaded from the API.
    await saveHost()
    const stored = await storedHost()
    expect(stored.auth_required).toBe(true)
    expect(stored.auth_allowed_users).toEqual([aliceId])
    expect(stored.auth_allowed_groups).toEqual(['ops'])
    await openHost()
    await page
      .getByTestId('who-may-enter')
      .getByRole('list', { name: 'Users who may enter' })
      .getByText('Alice <alice@example.test>')
      .waitFor()
    expect(await page.getByLabel('Only the users and groups chosen below').isChecked()).toBe(true)

    // Back to anyone signed in: both lists go empty.
    await page.getByLabel('Any signed-in user').check()
    await saveHost()
    const after = await storedHost()
    expect([after.auth_allowed_users, after.auth_allowed_groups]).toEqual([[], []])
  })
})

describe('geo rules of a path rule', () => {
  it('a rule stricter than its host is tried on its own requests, saved and listed; the rule form passes axe', async () => {
    await openHost()
    await page.getByRole('button', { name: 'Edit rule /admin/*' }).click()
    const form = page.locator('form.rule-form')
    await form.getByTestId('rule-geo').locator('summary').click()
    await form.getByLabel('Limit who may enter by country, network or address').check()
    const first = geoRule(form, 0)
    await first.getByLabel('Rule 1 does').selectOption('deny')
    await first.getByLabel('Countries of rule 1', { exact: true }).fill('France')
    await first.getByLabel('Countries of rule 1', { exact: true }).press('Enter')
    await first.getByRole('list', { name: 'Countries of rule 1' }).getByText('France').waitFor()
    const preview = form.getByTestId('access-preview')
    await preview.getByRole('button', { name: 'Try against the last 7 days' }).click()
    await preview.getByRole('table').first().waitFor()
    // Only this rule's rows (logs.rule_id): 3 requests, the 2 from France refused.
    expect(await figure(preview, 'Requests')).toBe('3')
    expect(await figure(preview, 'Requests that would be refused')).toBe('2')
    expect(
      await preview
        .getByRole('table', { name: 'Refused, by country' })
        .getByRole('row', { name: /France/ })
        .textContent(),
    ).toContain('2')
    expect(await axeProblemsInBothThemesAndWidths(page, 'path rule form, geo rules open')).toEqual([])
    await form.getByRole('button', { name: 'Save rule' }).click()
    await page.getByText('Rule saved.').waitFor()
    await page.getByRole('cell', { name: /proxy to host default, 1 geo rule/ }).waitFor()
    const rules = (await stack.panel.request(`/api/hosts/${hostId}/rules`, { cookie: stack.admin })).json
    expect(rules.find((r: any) => r.id === ruleId).geo_policy).toEqual({
      rules: [{ action: 'deny', countries: ['FR'], continents: [], asns: [], cidrs: [], access_list_id: null }],
      default: 'allow',
      unknown_address: 'allow_lan',
    })
  })
})

describe('the country ban preview on the Security screen', () => {
  it('shows what banning a country would have refused on every host, before banning', async () => {
    await page.goto(`${stack.panel.url}/security`)
    const card = page.locator('#countries')
    await card.getByLabel('Country', { exact: true }).fill('China')
    const preview = card.getByTestId('access-preview')
    await preview.getByRole('button', { name: 'Try against the last 7 days' }).click()
    await preview.getByRole('table').first().waitFor()
    expect(await figure(preview, 'Requests that would be refused')).toBe('6')
    expect(await figure(preview, 'Addresses that would be refused')).toBe('3')
    expect(await preview.getByRole('table', { name: 'Refused, by country' }).getByRole('row', { name: /China/ }).textContent()).toContain(
      '6',
    )
    expect((await stack.panel.request('/api/security/countries', { cookie: stack.admin })).json).toEqual([])
    expect(consoleErrors).toEqual([])
  })
})

describe('groups on the Users card', () => {
  it('groups given to a new user and edited are stored, and offered by the host form; the card passes axe', async () => {
    await page.goto(`${stack.panel.url}/settings`)
    const card = page.locator('section[aria-labelledby="users-h"]')
    await card.getByLabel('New user email').fill('bob@example.test')
    await card.getByLabel('Name', { exact: true }).fill('Bob')
    await card.getByLabel('Password (12+ characters)').fill('bob-password-12345')
    await card.getByLabel('Groups (comma separated)').fill('finance, ops')
    await card.getByRole('button', { name: 'Add user' }).click()
    await card.getByText('User bob@example.test created.').waitFor()
    const users = async () => (await stack.panel.request('/api/users', { cookie: stack.admin })).json as any[]
    const bob = (await users()).find((u) => u.email === 'bob@example.test')
    expect(bob.groups).toEqual(['finance', 'ops'])
    const cell = card.getByTestId(`groups-of-${bob.id}`)
    expect((await cell.textContent())!.replace(/\s+/g, ' ')).toContain('finance, ops')

    await cell.getByRole('button', { name: 'Edit the groups of bob@example.test' }).click()
    await cell.getByLabel('Groups of bob@example.test (comma separated)').fill('finance, support')
    expect(await axeProblemsInBothThemesAndWidths(page, 'users card, groups of a user open')).toEqual([])
    await cell.getByRole('button', { name: 'Save groups' }).click()
    await card.getByText('Groups of bob@example.test saved.').waitFor()
    expect((await users()).find((u) => u.email === 'bob@example.test').groups).toEqual(['finance', 'support'])
    // Role and name are kept by the groups' save.
    expect((await users()).find((u) => u.email === 'bob@example.test')).toMatchObject({ name: 'Bob', role: 'viewer' })

    // The host form's group picker offers the groups in use.
    await openHost()
    await page.getByLabel('Require panel login (ForwardAuth)').check()
    await page.getByTestId('who-may-enter').getByLabel('Only the users and groups chosen below').check()
    const groups = page.getByTestId('who-may-enter').getByLabel('Groups who may enter', { exact: true })
    const list = await groups.getAttribute('list')
    await page.locator(`datalist[id="${list}"] option[value="support"]`).waitFor({ state: 'attached' })
    expect(await page.locator(`datalist[id="${list}"] option`).evaluateAll((o) => o.map((x) => (x as HTMLOptionElement).value))).toEqual([
      'finance',
      'support',
    ])
    expect(consoleErrors).toEqual([])
  })
})

describe('networks picked by name', () => {
  it('the AS picker finds a network by its name, saves its number and shows the name again; the form passes axe', async () => {
    // The panel's AS database (the folder its refresh writes), named networks of a fixture.
    mkdirSync(join(stack.panel.dataDir, 'geoip'), { recursive: true })
    writeFileSync(
      join(stack.panel.dataDir, 'geoip/asn.mmdb'),
      writeMmdb(
        [
          ['198.51.100.0/28', { autonomous_system_number: 24940, autonomous_system_organization: 'Hetzner Online GmbH' }],
          ['198.51.100.16/28', { autonomous_system_number: 3320, autonomous_system_organization: 'Deutsche Telekom AG' }],
          ['203.0.113.0/24', { autonomous_system_number: 4134, autonomous_system_organization: 'Chinanet' }],
        ],
        'Test-ASN',
      ),
    )
    await openHost()
    const first = geoRule(hostGeo(), 0)
    const picker = first.getByLabel('AS numbers of rule 1', { exact: true })
    const chosen = first.getByRole('list', { name: 'AS numbers of rule 1' })
    // The number saved by the first case, now with its name.
    await chosen.getByText('AS4134 Chinanet').waitFor()
    // A few letters of the name offer the network; choosing the suggestion adds its number.
    await picker.fill('hetzner')
    await first.locator('datalist option[value="Hetzner Online GmbH (AS24940)"]').waitFor({ state: 'attached' })
    await picker.fill('Hetzner Online GmbH (AS24940)')
    await picker.press('Enter')
    await chosen.getByText('AS24940 Hetzner Online GmbH').waitFor()
    // A name typed in full is taken once the search has found it.
    await picker.fill('deutsche telekom ag')
    await first.locator('datalist option[value="Deutsche Telekom AG (AS3320)"]').waitFor({ state: 'attached' })
    await picker.press('Enter')
    await chosen.getByText('AS3320 Deutsche Telekom AG').waitFor()
    // A name no network has is refused at the field, nothing added.
    await picker.fill('no such network')
    await picker.press('Enter')
    await first.getByText('"no such network" is no network').waitFor()
    expect(await chosen.getByRole('listitem').count()).toBe(3)
    expect(await axeProblemsInBothThemesAndWidths(page, 'host form, networks chosen by name')).toEqual([])

    await saveHost()
    expect((await storedHost()).geo_policy.rules[0].asns).toEqual([4134, 24940, 3320])
    await openHost()
    const reopened = geoRule(hostGeo(), 0).getByRole('list', { name: 'AS numbers of rule 1' })
    await reopened.getByText('AS24940 Hetzner Online GmbH').waitFor()
    await reopened.getByText('AS3320 Deutsche Telekom AG').waitFor()
    await geoRule(hostGeo(), 0)
      .getByText('Rule 1: Refuse China, AS4134 Chinanet, AS24940 Hetzner Online GmbH, AS3320 Deutsche Telekom AG')
      .waitFor()
  })
})
