import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decisionsFor, postDecisions, type CrowdsecHandle } from '../support/crowdsec'
import { startEdgeStack, type EdgeStack } from '../support/edge-stack'
import { eventually } from '../support/http'
import { writeMmdb } from '../support/mmdb-writer'
import { makeTempDir } from '../support/processes'
import { createGroup, createHost, type ProxyStack } from '../support/proxy-stack'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

// A whitelist that protects from every origin: a whitelisted source reaches the
// upstream whatever bans exist (an engine/cscli-style ban, a country range),
// its neighbour does not; a country expansion is split around it.

const WHITELISTED = '198.51.100.140',
  NEIGHBOUR = '198.51.100.141',
  COUNTRY_ONLY = '198.51.100.142',
  LATE = '198.51.100.143'
let edge: EdgeStack
let cs: CrowdsecHandle
let stack: ProxyStack

beforeAll(async () => {
  const dataDir = makeTempDir('panel-wl-')
  mkdirSync(join(dataDir, 'geoip'))
  // The test's "country": the namespace's upper half.
  writeFileSync(join(dataDir, 'geoip/country.mmdb'), writeMmdb([['198.51.100.128/25', { country_code: 'LU' }]]))
  edge = await startEdgeStack({ clientAddresses: [WHITELISTED, NEIGHBOUR, COUNTRY_ONLY, LATE], dataDir, tickerSeconds: 1 })
  ;({ cs, stack } = edge)
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${edge.up.port}` }] })
  expect((await createHost(stack, { domain: 'shop.example.test', target_group_id: group.id })).status).toBe(201)
})
afterAll(async () => {
  await edge?.stop()
})

const get = (from: string) => edge.get(from, 'shop.example.test')
const becomes = (from: string, status: number) =>
  eventually(
    () => get(from),
    (r) => r.status === status,
    5_000,
    100,
  )
const whitelist = (value: string) =>
  stack.panel.request('/api/security/whitelist', { method: 'POST', cookie: stack.admin, body: { value, reason: 'office' } })

describe('a whitelisted source is never refused by the bouncer', () => {
  it('whitelisting removes the decisions it covers and changes the proxy configuration', async () => {
    await postDecisions(cs, [{ value: WHITELISTED }])
    expect((await becomes(WHITELISTED, 403)).status).toBe(403)
    const res = await whitelist(WHITELISTED)
    expect(res.status, res.text).toBe(201)
    expect(res.json.removed_decision_count).toBe(1)
    expect(await decisionsFor(cs, WHITELISTED)).toEqual([])
    expect(JSON.stringify(await stack.caddy.getConfig())).toContain(`"not":[{"remote_ip":{"ranges":["${WHITELISTED}"]}}]`)
    expect((await becomes(WHITELISTED, 200)).status).toBe(200)
  })

  it('a ban made afterwards (engine or cscli) does not reach it; its neighbour is refused', async () => {
    await postDecisions(cs, [
      { value: WHITELISTED, origin: 'cscli' },
      { value: NEIGHBOUR, origin: 'crowdsec', scenario: 'crowdsecurity/http-probing' },
    ])
    expect((await becomes(NEIGHBOUR, 403)).status).toBe(403)
    expect((await decisionsFor(cs, WHITELISTED)).length).toBe(1)
    expect((await get(WHITELISTED)).status).toBe(200)
  })

  it('a ban through the panel of a whitelisted source is refused, naming the entry', async () => {
    const res = await stack.panel.request('/api/security/decisions', { method: 'POST', cookie: stack.admin, body: { value: WHITELISTED } })
    expect(res.status).toBe(409)
    expect(res.json.error).toBe(
      `value: ${WHITELISTED} is covered by the whitelist entry ${WHITELISTED}; remove it from the whitelist first`,
    )
  })

  it('a country ban is split around it, and covers the rest of the country', async () => {
    const res = await stack.panel.request('/api/security/countries/lu/expand', {
      method: 'POST',
      cookie: stack.admin,
      body: { duration: '1h' },
    })
    expect(res.status, res.text).toBe(202)
    const job = await eventually(
      () => stack.panel.request(`/api/security/jobs/${res.json.id}`, { cookie: stack.admin }),
      (r) => ['completed', 'failed'].includes(r.json?.state),
      30_000,
      200,
    )
    expect(job.json.state).toBe('completed')
    const countryRanges = (await decisionsFor(cs, COUNTRY_ONLY)).filter((d) => d.origin === 'panel-country-LU')
    expect(countryRanges.length).toBe(1)
    // No committed range contains the whitelisted address.
    expect((await decisionsFor(cs, WHITELISTED)).filter((d) => d.origin === 'panel-country-LU')).toEqual([])
    expect((await becomes(COUNTRY_ONLY, 403)).status).toBe(403)
    expect((await get(WHITELISTED)).status).toBe(200)
  })

  it('whitelisting an address inside an existing country range protects it too', async () => {
    expect((await becomes(LATE, 403)).status).toBe(403)
    expect((await whitelist(LATE)).status).toBe(201)
    // The country range that contains it is still there; the proxy skips the bouncer for it.
    expect((await decisionsFor(cs, LATE)).some((d) => d.origin === 'panel-country-LU')).toBe(true)
    expect((await becomes(LATE, 200)).status).toBe(200)
    expect((await get(COUNTRY_ONLY)).status).toBe(403)
  })

  it('removing the entry lets the bans it still has apply again', async () => {
    const res = await stack.panel.request(`/api/security/whitelist/${encodeURIComponent(WHITELISTED)}`, {
      method: 'DELETE',
      cookie: stack.admin,
    })
    expect(res.status, res.text).toBe(204)
    expect((await becomes(WHITELISTED, 403)).status).toBe(403)
  })
})
