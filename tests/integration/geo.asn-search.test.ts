import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { writeMmdb } from '../support/mmdb-writer'
import { startPanel, type PanelHandle } from '../support/panel'
import { makeTempDir } from '../support/processes'

// The AS picker's search (GET /api/geoip/asns, docs/api.md): networks of the panel's asn.mmdb by
// name or number, and the names of given numbers; built from the file the panel keeps, and built
// again when a refresh replaces it. The panel starts without the database.

const asnDb = (names: Array<[string, number, string]>) =>
  writeMmdb(
    names.map(([cidr, asn, name]) => [cidr, { autonomous_system_number: asn, autonomous_system_organization: name }]),
    'Test-ASN',
  )
const FIRST: Array<[string, number, string]> = [
  ['198.51.100.0/28', 24940, 'Hetzner Online GmbH'],
  ['198.51.100.16/28', 213230, 'Hetzner Cloud GmbH'],
  ['198.51.100.32/28', 3320, 'Deutsche Telekom AG'],
  // A second network of the same AS: one entry.
  ['198.51.100.48/28', 3320, 'Deutsche Telekom AG'],
  ['198.51.100.64/28', 64500, 'Partner of Hetzner'],
  ['198.51.100.80/28', 64501, '3320 Hosting'],
  ['203.0.113.0/24', 64502, 'Réseau Éxample'],
]

let panel: PanelHandle
let admin: string
let dataDir: string
let srcDir: string
const search = (query: string) => panel.request(`/api/geoip/asns?${query}`, { cookie: admin })

beforeAll(async () => {
  dataDir = makeTempDir('panel-asns-')
  srcDir = makeTempDir('panel-asns-src-')
  mkdirSync(join(dataDir, 'geoip'))
  writeFileSync(join(srcDir, 'country.mmdb'), writeMmdb([['198.51.100.0/24', { country: { iso_code: 'DE' } }]]))
  panel = await startPanel({
    dataDir,
    env: {
      GEOIP_COUNTRY_URL: pathToFileURL(join(srcDir, 'country.mmdb')).href,
      GEOIP_ASN_URL: pathToFileURL(join(srcDir, 'asn.mmdb')).href,
    },
  })
  admin = await panel.login()
})
afterAll(async () => {
  await panel?.stop()
})

describe('searching the networks of the AS database', () => {
  it('without the database: no networks, a note saying what to do, numbers still answered', async () => {
    const res = await search('q=hetzner')
    expect(res.status, res.text).toBe(200)
    expect(res.json.networks).toEqual([])
    expect(res.json.database).toEqual({ loaded: false, version: null })
    expect(res.json.note).toMatch(/AS number database \(asn\.mmdb\) is not loaded.*Settings, Geolocation/)
    const named = await search('asn=3320')
    expect(named.status, named.text).toBe(200)
    expect(named.json.networks).toEqual([{ asn: 3320, name: null }])
  })

  it('ranks the exact number first, then names starting with the text, then names containing it', async () => {
    writeFileSync(join(dataDir, 'geoip/asn.mmdb'), asnDb(FIRST))
    const res = await search('q=hetzner')
    expect(res.status, res.text).toBe(200)
    expect(res.json.networks).toEqual([
      { asn: 213230, name: 'Hetzner Cloud GmbH' },
      { asn: 24940, name: 'Hetzner Online GmbH' },
      { asn: 64500, name: 'Partner of Hetzner' },
    ])
    expect(res.json.database.loaded).toBe(true)
    expect(res.json.note).toBeNull()
    expect((await search('q=Deutsche%20Telekom')).json.networks).toEqual([{ asn: 3320, name: 'Deutsche Telekom AG' }])
    expect((await search('q=AS3320')).json.networks).toEqual([{ asn: 3320, name: 'Deutsche Telekom AG' }])
    expect((await search('q=3320')).json.networks).toEqual([
      { asn: 3320, name: 'Deutsche Telekom AG' },
      { asn: 64501, name: '3320 Hosting' },
    ])
    // Accents and case do not matter.
    expect((await search('q=reseau%20ex')).json.networks).toEqual([{ asn: 64502, name: 'Réseau Éxample' }])
    expect((await search('q=hetzner&limit=2')).json.networks.map((n: any) => n.asn)).toEqual([213230, 24940])
    expect((await search('q=nothing-like-it')).json.networks).toEqual([])
  })

  it('names given numbers, null for a number the database does not know', async () => {
    const res = await search('asn=3320,AS24940,%2099999')
    expect(res.status, res.text).toBe(200)
    expect(res.json.networks).toEqual([
      { asn: 3320, name: 'Deutsche Telekom AG' },
      { asn: 24940, name: 'Hetzner Online GmbH' },
      { asn: 99999, name: null },
    ])
  })

  it('refuses bad input naming the field', async () => {
    const cases: Array<[string, RegExp]> = [
      ['', /^q: /],
      ['asn=hetzner', /^asn: must be AS numbers separated by commas/],
      ['asn=0', /^asn: 0 is no AS number/],
      ['q=hetzner&limit=0', /^limit: must be at least 1/],
      ['q=hetzner&limit=101', /^limit: must be at most 100/],
      ['q=', /^q: must not be empty/],
      ['q=a%01b', /^q: must not contain control characters/],
      ['q=hetzner&sort=name', /sort/],
    ]
    for (const [query, error] of cases) {
      const res = await search(query)
      expect(res.status, `${query}: ${res.text}`).toBe(400)
      expect(res.json.error, query).toMatch(error)
    }
  })

  it('is built again from the new file when a refresh replaces the database', async () => {
    const renamed = FIRST.map(([c, a, n]): [string, number, string] => [c, a, a === 24940 ? 'Hetzner Online AG' : n])
    writeFileSync(join(srcDir, 'asn.mmdb.tmp'), asnDb([...renamed, ['192.0.2.0/24', 65010, 'Hetzner Newcomer']]))
    renameSync(join(srcDir, 'asn.mmdb.tmp'), join(srcDir, 'asn.mmdb'))
    const refresh = await panel.request('/api/geoip/refresh', { method: 'POST', cookie: admin })
    expect(refresh.status, refresh.text).toBe(200)
    expect((await search('q=hetzner')).json.networks).toEqual([
      { asn: 213230, name: 'Hetzner Cloud GmbH' },
      { asn: 65010, name: 'Hetzner Newcomer' },
      { asn: 24940, name: 'Hetzner Online AG' },
      { asn: 64500, name: 'Partner of Hetzner' },
    ])
  })
})
