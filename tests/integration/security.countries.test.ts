import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decisionsFor, panelEnvFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { eventually } from '../support/http'
import { makeTempDir } from '../support/processes'
import { freePort } from '../support/ports'
import { registerTestSecret, startPanel, type PanelHandle } from '../support/panel'
import { writeMmdb } from '../support/mmdb-writer'

const REAL_DB = fileURLToPath(new URL('../../node_modules/@ip-location-db/geolite2-country-mmdb/geolite2-country.mmdb', import.meta.url))
// Exact expectations: LU has three IPv4 networks that merge into one /22, and one IPv6 network.
const SMALL_DB = writeMmdb([
  ['5.0.0.0/24', { country_code: 'LU' }],
  ['5.0.1.0/24', { country_code: 'LU' }],
  ['5.0.2.0/23', { country_code: 'LU' }],
  ['2a01:e00::/32', { country_code: 'LU' }],
  ['81.2.69.0/24', { country_code: 'GB' }],
])

let cs: CrowdsecHandle
beforeAll(async () => {
  cs = await startCrowdsec()
  registerTestSecret(cs.machinePassword, cs.bouncerKey)
})
afterAll(async () => {
  await cs?.stop()
})

async function panelWith(db: Buffer | string, extra: Record<string, string> = {}) {
  const dataDir = makeTempDir('panel-geo-')
  mkdirSync(join(dataDir, 'geoip'))
  if (typeof db === 'string') copyFileSync(db, join(dataDir, 'geoip/country.mmdb'))
  else writeFileSync(join(dataDir, 'geoip/country.mmdb'), db)
  const panel = await startPanel({ dataDir, env: { ...panelEnvFor(cs), PANEL_COUNTRY_RECONCILE_SECONDS: '1', ...extra } })
  return { panel, cookie: await panel.login() }
}

async function waitForJob(panel: PanelHandle, cookie: string, id: number, timeoutMs = 60_000) {
  const res = await eventually(
    () => panel.request(`/api/security/jobs/${id}`, { cookie }),
    (r) => ['completed', 'failed'].includes(r.json?.state),
    timeoutMs,
    200,
  )
  return res.json
}

async function machineToken() {
  const r = await fetch(`${cs.url}/v1/watchers/login`, {
    method: 'POST',
    headers: { 'user-agent': 'panel-test/1.0', 'content-type': 'application/json' },
    body: JSON.stringify({ machine_id: cs.machineId, password: cs.machinePassword }),
  })
  return (await r.json()).token as string
}
const originDecisions = async (cc: string) =>
  (await (
    await fetch(`${cs.url}/v1/decisions?origins=panel-country-${cc}&scopes=range`, {
      headers: { 'user-agent': 'panel-test/1.0', 'x-api-key': cs.bouncerKey },
    })
  ).json()) ?? []

describe('country expansion with a database written by the test', () => {
  let panel: PanelHandle, cookie: string
  beforeAll(async () => ({ panel, cookie } = await panelWith(SMALL_DB)))
  afterAll(async () => {
    await panel?.stop()
  })

  it('looks addresses up, with LAN answering LAN / 0', async () => {
    expect((await panel.request('/api/geoip/lookup?ip=5.0.1.7', { cookie })).json).toMatchObject({ country: 'LU', as_number: null })
    expect((await panel.request('/api/geoip/lookup?ip=192.168.1.1', { cookie })).json).toMatchObject({ country: 'LAN', as_number: 0 })
    expect((await panel.request('/api/geoip/lookup?ip=nope', { cookie })).status).toBe(400)
    expect((await panel.request('/api/geoip/status', { cookie })).json.country).toMatchObject({
      loaded: true,
      version: '2023-11-14T22:13:20.000Z',
      build_epoch: 1_700_000_000,
    })
  })

  it('expands: 202 pending, then completed with every chunk done, the CIDRs in the LAPI and a tracking record', async () => {
    const res = await panel.request('/api/security/countries/lu/expand', {
      method: 'POST',
      cookie,
      body: { duration: '1h', reason: 'test' },
    })
    expect(res.status).toBe(202)
    expect(res.json).toMatchObject({
      country_code: 'LU',
      state: 'pending',
      chunks_total: 0,
      chunks_done: 0,
      chunks_failed: 0,
      cidr_committed: 0,
      requested_count: 0,
      duration: '1h',
      reason: 'test',
      error_message: '',
      started_at: null,
      completed_at: null,
      created_by: 'admin@example.test',
    })
    const job = await waitForJob(panel, cookie, res.json.id)
    expect(job).toMatchObject({
      state: 'completed',
      chunks_total: 1,
      chunks_done: 1,
      chunks_failed: 0,
      cidr_committed: 2,
      requested_count: 2,
      error_message: '',
    })
    expect((await decisionsFor(cs, '5.0.1.7')).map((d) => [d.value, d.origin])).toEqual([['5.0.0.0/22', 'panel-country-LU']])
    const [record] = (await panel.request('/api/security/countries', { cookie })).json
    expect(record).toMatchObject({
      country_code: 'LU',
      cidrs: ['5.0.0.0/22', '2a01:e00::/32'],
      cidr_count: 2,
      mmdb_version: '2023-11-14T22:13:20.000Z',
      state: 'active',
    })
    const annotated = (await panel.request('/api/security/decisions?origin=panel-country-LU', { cookie })).json
    expect(annotated.map((d: any) => d.country)).toEqual(['LU', 'LU'])
  })

  it('marks the record drifted when decisions vanish behind its back, and active again after re-expansion', async () => {
    const token = await machineToken()
    await fetch(`${cs.url}/v1/decisions?value=5.0.0.0/22`, {
      method: 'DELETE',
      headers: { 'user-agent': 'panel-test/1.0', authorization: `Bearer ${token}` },
    })
    await eventually(
      () => panel.request('/api/security/countries', { cookie }),
      (r) => r.json[0]?.state === 'drifted',
      10_000,
      250,
    )
    const again = await panel.request('/api/security/countries/LU/expand', { method: 'POST', cookie, body: { duration: '1h' } })
    expect((await waitForJob(panel, cookie, again.json.id)).state).toBe('completed')
    await eventually(
      () => panel.request('/api/security/countries', { cookie }),
      (r) => r.json[0]?.state === 'active',
      10_000,
      250,
    )
    expect((await originDecisions('LU')).length).toBe(2) // replaced, not doubled
  })

  it('runs concurrent submissions one after the other', async () => {
    const [a, b] = await Promise.all(
      ['LU', 'GB'].map((cc) => panel.request(`/api/security/countries/${cc}/expand`, { method: 'POST', cookie, body: { duration: '2h' } })),
    )
    const [ja, jb] = [await waitForJob(panel, cookie, a.json.id), await waitForJob(panel, cookie, b.json.id)]
    expect([ja.state, jb.state]).toEqual(['completed', 'completed'])
    const [first, second] = [ja, jb].sort((x, y) => x.id - y.id)
    expect(Date.parse(second.started_at)).toBeGreaterThanOrEqual(Date.parse(first.completed_at))
    const jobs = (await panel.request('/api/security/jobs?limit=2', { cookie })).json
    expect(jobs.map((j: any) => j.id)).toEqual([second.id, first.id])
    expect((await panel.request('/api/security/jobs?country=GB', { cookie })).json.map((j: any) => j.id)).toEqual([jb.id])
  })

  it('revokes with one call: no decision of that origin is left and the count is reported', async () => {
    const res = await panel.request('/api/security/countries/LU', { method: 'DELETE', cookie })
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ country_code: 'LU', removed_decision_count: 2 })
    expect(await originDecisions('LU')).toEqual([])
    expect((await panel.request('/api/security/countries', { cookie })).json.map((r: any) => r.country_code)).toEqual(['GB'])
    expect((await panel.request('/api/security/countries/LU', { method: 'DELETE', cookie })).status).toBe(404)
  })

  it.each([
    // Two letters that name no country: a missing row, like an unknown id (docs/api.md).
    ['/api/security/countries/XX/expand', { duration: '1h' }, 404, /ISO 3166-1/],
    ['/api/security/countries/ZZ/expand', { duration: '1h' }, 404, /ISO 3166-1/],
    ['/api/security/countries/FR/expand', { duration: '10y' }, 400, /Go duration/],
    ['/api/security/countries/FR/expand', { duration: '0s' }, 400, /longer than zero/],
    ['/api/security/countries/FR/expand', {}, 400, /duration: is required/],
  ])('POST %s %j -> %i', async (path, body, status, message) => {
    const res = await panel.request(path, { method: 'POST', cookie, body })
    expect(res.status).toBe(status)
    expect(res.json.error).toMatch(message)
  })

  it('job look-ups: 404 for a missing id, 400 for a limit over 200', async () => {
    expect((await panel.request('/api/security/jobs/99999', { cookie })).status).toBe(404)
    expect((await panel.request('/api/security/jobs?limit=500', { cookie })).status).toBe(400)
  })

  it('all chunks failing (the LAPI is stopped) ends failed with the transport error', async () => {
    await cs.stop()
    try {
      const res = await panel.request('/api/security/countries/LU/expand', { method: 'POST', cookie, body: { duration: '1h' } })
      const job = await waitForJob(panel, cookie, res.json.id)
      expect(job.state).toBe('failed')
      expect(job.error_message).toMatch(/^all 1 chunks failed: .*unreachable/)
    } finally {
      await cs.restart()
    }
  })
})

describe('the real country database', () => {
  it('expands a small and a fragmented country: every committed CIDR is in the LAPI with the panel origin', async () => {
    const { panel, cookie } = await panelWith(REAL_DB)
    try {
      for (const cc of ['LU', 'FR']) {
        const res = await panel.request(`/api/security/countries/${cc}/expand`, { method: 'POST', cookie, body: { duration: '24h' } })
        const job = await waitForJob(panel, cookie, res.json.id, 120_000)
        expect(job, `job ${cc}: ${job.error_message}`).toMatchObject({ state: 'completed', chunks_failed: 0 })
        expect(job.chunks_done).toBe(job.chunks_total)
        const record = (await panel.request('/api/security/countries', { cookie })).json.find((r: any) => r.country_code === cc)
        const inLapi = (await originDecisions(cc)).map((d: any) => d.value).sort()
        expect(inLapi).toEqual([...record.cidrs].sort())
        expect(inLapi.length).toBe(job.cidr_committed)
      }
      expect((await panel.request('/api/geoip/lookup?ip=8.8.8.8', { cookie })).json.country).toBe('US')
    } finally {
      await panel.stop()
      await fetch(`${cs.url}/health`)
    }
  })

  // Failure injection: a relay in front of the real local API refuses every POST of one chunk (the
  // first attempt and the retry). Two chunks are in flight at once; the job must still account for
  // each chunk exactly and track only what landed, in chunk order.
  it('a chunk the local API refuses is skipped: the others land, the job completes and says how many failed', async () => {
    const refused: string[] = []
    const relayPort = await freePort()
    const relay = createServer((req, res) => {
      const parts: Buffer[] = []
      req.on('data', (c: Buffer) => parts.push(c))
      req.on('end', async () => {
        const body = Buffer.concat(parts)
        if (req.method === 'POST' && req.url?.startsWith('/v1/alerts') && body.toString().includes('chunk 2/')) {
          for (const alert of JSON.parse(body.toString())) refused.push(...alert.decisions.map((d: { value: string }) => d.value))
          res.writeHead(500, { 'content-type': 'application/json' }).end('{"message":"injected failure"}')
          return
        }
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length', 'transfer-encoding'].includes(k)),
        ) as Record<string, string>
        const answer = await fetch(`${cs.url}${req.url}`, { method: req.method, headers, body: body.length ? body : undefined })
        res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' })
        res.end(Buffer.from(await answer.arrayBuffer()))
      })
    })
    await new Promise<void>((r) => relay.listen(relayPort, '127.0.0.1', r))
    const { panel, cookie } = await panelWith(REAL_DB, { LAPI_URL: `http://127.0.0.1:${relayPort}` })
    try {
      const res = await panel.request('/api/security/countries/FR/expand', { method: 'POST', cookie, body: { duration: '1h' } })
      const job = await waitForJob(panel, cookie, res.json.id, 120_000)
      expect(job.chunks_total).toBeGreaterThan(4)
      expect(job).toMatchObject({ state: 'completed', chunks_failed: 1, chunks_done: job.chunks_total - 1 })
      expect(job.error_message).toMatch(new RegExp(`^1 of ${job.chunks_total} chunks failed: .*500`))
      const uniqueRefused = [...new Set(refused)]
      expect(refused.length).toBe(2 * uniqueRefused.length) // tried once more
      expect(uniqueRefused.length).toBe(500)
      const record = (await panel.request('/api/security/countries', { cookie })).json.find((r: any) => r.country_code === 'FR')
      expect(record.cidrs.length).toBe(job.cidr_committed)
      expect(job.cidr_committed + uniqueRefused.length).toBe(job.requested_count)
      expect(record.cidrs.filter((c: string) => uniqueRefused.includes(c))).toEqual([])
      const inLapi = (await originDecisions('FR')).map((d: any) => d.value).sort()
      expect(inLapi).toEqual([...record.cidrs].sort())
    } finally {
      await panel.stop()
      await new Promise<void>((r) => relay.close(() => r()))
    }
  })

  it('a job interrupted by a killed panel is failed with "panel restarted" at the next start', async () => {
    const { panel, cookie } = await panelWith(REAL_DB)
    const res = await panel.request('/api/security/countries/US/expand', { method: 'POST', cookie, body: { duration: '1h' } })
    await eventually(
      () => panel.request(`/api/security/jobs/${res.json.id}`, { cookie }),
      (r) => r.json.state === 'running',
      20_000,
      50,
    )
    await panel.kill('SIGKILL')
    const again = await startPanel({ dataDir: panel.dataDir, env: panelEnvFor(cs) })
    try {
      const job = (await again.request(`/api/security/jobs/${res.json.id}`, { cookie: await again.login() })).json
      expect(job).toMatchObject({ state: 'failed', error_message: 'panel restarted' })
    } finally {
      await again.stop()
    }
  })
})

describe('geolocation refresh from a local server', () => {
  let server: Server
  let body: Buffer = SMALL_DB
  let port: number
  beforeAll(async () => {
    port = await freePort()
    server = createServer((req, res) => {
      res.end(req.url?.endsWith('.gz') ? gzipSync(body) : body)
    })
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r))
  })
  afterAll(() => new Promise<void>((r) => server.close(() => r())))

  it('downloads both files (plain and gzip), keeps the old ones when a download is not a database', async () => {
    const dataDir = makeTempDir('panel-geo-')
    const panel = await startPanel({
      dataDir,
      env: { GEOIP_COUNTRY_URL: `http://127.0.0.1:${port}/country.mmdb`, GEOIP_ASN_URL: `http://127.0.0.1:${port}/asn.mmdb.gz` },
    })
    try {
      const cookie = await panel.login()
      const ok = await panel.request('/api/geoip/refresh', { method: 'POST', cookie })
      expect(ok.status).toBe(200)
      expect(ok.json).toMatchObject({ country: { loaded: true }, asn: { loaded: true }, last_refresh_status: 'ok' })
      expect((await panel.request('/api/geoip/lookup?ip=5.0.1.7', { cookie })).json.country).toBe('LU')
      body = Buffer.from('this is not a database')
      const bad = await panel.request('/api/geoip/refresh', { method: 'POST', cookie })
      expect(bad.status).toBe(502)
      expect(bad.json.error).toContain(
        `Country database: the download from http://127.0.0.1:${port}/country.mmdb failed (not a MaxMind database: `,
      )
      // A working file was there before: the answer says it stays in use.
      expect(bad.json.error).toMatch(/Check "Country database URL" in Settings -> Geolocation\. The file downloaded before stays in use\./)
      expect((await panel.request('/api/geoip/lookup?ip=5.0.1.7', { cookie })).json.country).toBe('LU')
      expect((await panel.request('/api/geoip/status', { cookie })).json.last_refresh_status).toBe('failed')
    } finally {
      body = SMALL_DB
      await panel.stop()
    }
  })
})
