import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { createPublicClientNamespace, type PublicClientNamespace } from '../support/netns'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'

// Exclusions that unblock (docs/waf.md): a request that matched several CRS rules is
// refused by their sum, so the row lists every rule with its score, offers the set that
// brings the request under the threshold, previews it against the stored rows, and the
// set, applied in one revision, lets the very request through the production Caddy
// (Coraza, full CRS) while the same request on another path stays blocked.

const HOST = 'shop.example.test'
const HOST_ADDRESS = '198.51.100.1'
const CLIENT = '198.51.100.44'
// Matches libinjection (942100) and the UNION SELECT rules of CRS's 942 file.
const ATTACK = "q=1'%20UNION%20SELECT%20password%20FROM%20users--"
const XSS = 'q=%3Cscript%3Ealert(1)%3C/script%3E'

let stack: ProxyStack
let up: TestUpstream
let ns: PublicClientNamespace
let hostId: number

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: HOST_ADDRESS, clientAddresses: [CLIENT] })
  stack = await startProxyStack({ httpListenExtra: [HOST_ADDRESS] })
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const res = await createHost(stack, {
    domain: HOST,
    target_group_id: group.id,
    waf_enabled: true,
    waf_mode: 'blocking',
    waf_profile: 'full',
    bouncer_enabled: false,
  })
  expect(res.status, res.text).toBe(201)
  hostId = res.json.id
}, 120_000)
afterAll(async () => {
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

const send = async (path: string) =>
  (await ns.curl(`http://${HOST_ADDRESS}:${stack.httpPort}${path}`, ['-H', `Host: ${HOST}`], { fromAddress: CLIENT })).status
const api = (path: string, init: { method?: string; body?: unknown } = {}) => stack.panel.request(path, { cookie: stack.admin, ...init })
const tagOf = (p: unknown) => (typeof p === 'string' ? new URL(p, 'http://x').searchParams.get('t') : null)
const wafRows = async () => (await api(`/api/logs?source=waf_audit&host_id=${hostId}&limit=500`)).json as any[]
const rowsFor = (tags: string[]) => eventually(wafRows, (rows) => tags.every((t) => rows.some((r) => tagOf(r.path) === t)), 15_000, 200)
const reachedUpstream = (tag: string) => up.requests.some((r) => tagOf(r.url) === tag)

describe('a request refused by the sum of several rules', () => {
  let rowId = 0
  let offered: number[] = []

  it('is stored with every rule it matched, their scores adding up to the total CRS logged', async () => {
    for (const t of ['a1', 'a2']) expect(await send(`/search?${ATTACK}&t=${t}`)).toBe(403)
    expect(await send(`/other?${ATTACK}&t=b1`)).toBe(403)
    expect(await send(`/search?${XSS}&t=x1`)).toBe(403)
    const rows = await rowsFor(['a1', 'a2', 'b1', 'x1'])
    const row = rows.find((r) => tagOf(r.path) === 'a1')
    rowId = row.id
    const scored = row.waf_rules.filter((r: any) => r.score > 0)
    expect(scored.length, JSON.stringify(row.waf_rules)).toBeGreaterThanOrEqual(3)
    expect(scored.map((r: any) => r.id)).toContain(942100)
    for (const r of scored) expect(r).toMatchObject({ severity: expect.any(String), score: expect.any(Number), msg: expect.any(String) })
    expect(scored.reduce((s: number, r: any) => s + r.score, 0)).toBe(row.waf_anomaly_score)
    expect(row.waf_rules.map((r: any) => r.id)).toContain(949110)
  })

  it('offers the set that brings it under the threshold, with a preview counted on the stored rows', async () => {
    const res = await api(`/api/logs/${rowId}/waf-unblock`)
    expect(res.status, res.text).toBe(200)
    const u = res.json
    expect(u).toMatchObject({
      log_id: rowId,
      host_id: hostId,
      host_domain: HOST,
      request_path: '/search',
      threshold: 5,
      path_unusable: null,
    })
    const row = (await wafRows()).find((r) => r.id === rowId)
    expect(u.score).toBe(row.waf_anomaly_score)
    // Every scoring rule, since one left on (5 points) still reaches the threshold of 5.
    const scoring = row.waf_rules.filter((r: any) => r.score > 0)
    offered = u.offers.path.rule_ids
    expect([...offered].sort()).toEqual(scoring.map((r: any) => r.id).sort())
    expect(u.offers.path).toMatchObject({ path: '/search', unblocks: true, already_excluded: [] })
    expect(u.offers.path.steps.at(-1).remaining).toBeLessThan(5)
    expect(u.offers.path.steps.slice(0, -1).every((s: any) => s.remaining >= 5)).toBe(true)
    // Four blocked requests: the two on /search pass with the set there; /other too with it host-wide; the XSS never.
    expect(u.offers.path.preview).toEqual({ considered: 4, would_pass: 2, already_passing: 0 })
    expect(u.offers.host).toMatchObject({ path: null, rule_ids: offered, unblocks: true })
    expect(u.offers.host.preview).toEqual({ considered: 4, would_pass: 3, already_passing: 0 })
    // The same counts for any set: one rule alone lets nothing through.
    const one = await api(`/api/hosts/${hostId}/waf-exclusion-preview?rule_ids=${offered[0]}&path=/search`)
    expect(one.json).toMatchObject({ host_id: hostId, path: '/search', threshold: 5, considered: 4, would_pass: 0 })
    const all = await api(`/api/hosts/${hostId}/waf-exclusion-preview?rule_ids=${offered.join(',')}`)
    expect(all.json).toMatchObject({ path: null, considered: 4, would_pass: 3 })
  })

  it('refuses a bad request naming the fix, and changes nothing', async () => {
    const bad = await api(`/api/hosts/${hostId}/waf-exclusion-preview?rule_ids=942100;drop`)
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatch(/^rule_ids: must be a comma-separated list of rule ids/)
    const foreign = await api(`/api/logs/${rowId}/waf-unblock`, { method: 'POST', body: { rule_ids: [941100] } })
    expect(foreign.status).toBe(400)
    expect(foreign.json.error).toMatch(/^rule_ids\.0: rule 941100 did not match in log row/)
    const access = ((await api('/api/logs?source=caddy_access&limit=1')).json as any[])[0]
    const wrong = await api(`/api/logs/${access.id}/waf-unblock`, { method: 'POST', body: {} })
    expect(wrong.status).toBe(400)
    expect((await api(`/api/hosts/${hostId}/waf-exclusions`)).json).toEqual([])
  })

  it('applied on the path in one revision and one audit row, lets the very request through there only', async () => {
    const revisionsBefore = ((await api('/api/revisions')).json as any[]).length
    const res = await api(`/api/logs/${rowId}/waf-unblock`, { method: 'POST', body: { scope: 'path' } })
    expect(res.status, res.text).toBe(201)
    expect(res.json.reconcile.status).toBe('applied')
    expect(res.json.already_excluded).toEqual([])
    expect(res.json.exclusions.map((e: any) => [e.rule_id, e.path, e.source_log_id])).toEqual(offered.map((id) => [id, '/search', rowId]))
    expect(((await api('/api/revisions')).json as any[]).length).toBe(revisionsBefore + 1)
    const audit = ((await api('/api/logs?source=audit&limit=200')).json as any[]).filter((a) => a.message === 'waf_exclusion_create')
    expect(audit).toHaveLength(1)
    expect(JSON.parse(audit[0].raw)).toMatchObject({ host_id: hostId, rule_ids: offered, path: '/search', source_log_id: rowId })

    expect(await send(`/search?${ATTACK}&t=a3`)).toBe(200)
    expect(reachedUpstream('a3')).toBe(true)
    expect(await send(`/other?${ATTACK}&t=b2`)).toBe(403)
    expect(reachedUpstream('b2')).toBe(false)
    expect(await send(`/search?${XSS}&t=x2`)).toBe(403)

    // The stored rows now count as passing with the host's exclusions; the same set again is a 409.
    const again = await api(`/api/logs/${rowId}/waf-unblock`)
    expect(again.json.offers.path).toMatchObject({ rule_ids: [], already_excluded: expect.arrayContaining(offered), unblocks: true })
    const dup = await api(`/api/logs/${rowId}/waf-unblock`, { method: 'POST', body: { scope: 'path', rule_ids: offered } })
    expect(dup.status).toBe(409)
    expect(dup.json.error).toMatch(/already excluded on host/)
  })
})
