import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postDecisions, type CrowdsecHandle } from '../support/crowdsec'
import { startEdgeStack, type EdgeStack } from '../support/edge-stack'
import { eventually } from '../support/http'
import { freePort } from '../support/ports'
import { createGroup, createHost, type ProxyStack } from '../support/proxy-stack'

// Pages of our own (docs/hosts.md, "Pages") through the production Caddy and the real
// engine, from public clients in a network namespace: each refusal and upstream failure
// answers a page with the host, the time and a request id that finds the access-log row.

const POLL_SECONDS = 3
const CLIENT = '198.51.100.10',
  BANNED = '198.51.100.230',
  LIMITED = '198.51.100.231'
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/

let edge: EdgeStack
let cs: CrowdsecHandle
let stack: ProxyStack

beforeAll(async () => {
  edge = await startEdgeStack({ clientAddresses: [CLIENT, BANNED, LIMITED], tickerSeconds: POLL_SECONDS })
  ;({ cs, stack } = edge)
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${edge.up.port}` }] })
  const dead = await createGroup(stack, { name: 'dead', targets: [{ address: `127.0.0.1:${await freePort()}` }] })
  for (const host of [
    { domain: 'lan.example.test', target_group_id: group.id, lan_only: true },
    { domain: 'bare.example.test', target_group_id: group.id, lan_only: true, error_pages: 'off' },
    { domain: 'shop.example.test', target_group_id: group.id, waf_enabled: true, waf_mode: 'blocking' },
    { domain: 'busy.example.test', target_group_id: group.id, rate_limit_enabled: true, rate_limit_rps: 1, rate_limit_burst: 0 },
    { domain: 'down.example.test', target_group_id: dead.id },
  ]) {
    const res = await createHost(stack, host)
    expect(res.status, res.text).toBe(201)
  }
})
afterAll(async () => {
  await edge?.stop()
})

/** A request with its headers (curl -i), split into status, headers and body. */
async function fetchPage(from: string, host: string, path = '/', headers: string[] = []) {
  const r = await edge.get(from, host, path, ['-i', ...headers.flatMap((h) => ['-H', h])])
  const cut = r.body.indexOf('\r\n\r\n')
  const head = r.body.slice(0, cut).split('\r\n').slice(1)
  const header = (name: string) => head.find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`))?.replace(/^[^:]*:\s*/, '') ?? null
  return { status: r.status, header, body: r.body.slice(cut + 4) }
}
const logs = async (query: string) => (await stack.panel.request(`/api/logs?${query}`, { cookie: stack.admin })).json as any[]
const rowOf = (id: string) =>
  eventually(
    () => logs(`request_id=${id}`),
    (r) => r.length === 1,
    15_000,
    200,
  )

describe('pages of our own through the production proxy', () => {
  it('a new panel answers pages', async () => {
    expect((await stack.panel.request('/api/settings', { cookie: stack.admin })).json['proxy.error_pages']).toBe(true)
  })

  it('LAN-only: a browser gets the HTML page, whose request id finds the access-log row', async () => {
    const page = await fetchPage(CLIENT, 'lan.example.test', '/private', ['Accept: text/html,application/xhtml+xml'])
    expect(page.status).toBe(403)
    expect(page.header('Content-Type')).toBe('text/html; charset=utf-8')
    expect(page.body).toContain('<h1>Access denied</h1>')
    expect(page.body).toContain('<p>Access denied: LAN only</p>')
    expect(page.body).toContain('lan.example.test')
    expect(page.body).not.toContain('http-equiv="refresh"')
    const id = UUID.exec(page.body)![0]
    const [row] = await rowOf(id)
    expect(row).toMatchObject({ request_id: id, status: 403, path: '/private', remote_ip: CLIENT, host_domain: 'lan.example.test' })
  })

  it('JSON for Accept: application/json, plain text otherwise', async () => {
    const json = await fetchPage(CLIENT, 'lan.example.test', '/', ['Accept: application/json'])
    expect(json.header('Content-Type')).toBe('application/json')
    const body = JSON.parse(json.body)
    expect(body).toMatchObject({ host: 'lan.example.test', error: expect.stringContaining('Access denied') })
    expect(body.request_id).toMatch(UUID)
    const text = await fetchPage(CLIENT, 'lan.example.test', '/', ['Accept: */*'])
    expect(text.header('Content-Type')).toBe('text/plain; charset=utf-8')
    expect(text.body).toMatch(/^403 Access denied.*\nAccess denied: LAN only\n/)
    expect(text.body).toMatch(new RegExp(`Request id: ${UUID.source}`))
  })

  it('nothing of a hostile request is reflected: path, User-Agent and a placeholder in them stay out', async () => {
    const page = await fetchPage(CLIENT, 'lan.example.test', '/%3Cscript%3Ealert(1)%3C/script%3E/{http.request.header.Cookie}', [
      'Accept: text/html',
      'User-Agent: <script>alert(2)</script>{http.request.header.Cookie}',
      'Cookie: secret=hunter2',
    ])
    expect(page.status).toBe(403)
    expect(page.body).not.toMatch(/<script|alert\(|hunter2|Cookie/)
    expect(page.body).toContain('lan.example.test')
  })

  it('a host with pages off keeps the bare answer', async () => {
    const page = await fetchPage(CLIENT, 'bare.example.test', '/', ['Accept: text/html'])
    expect([page.status, page.body]).toEqual([403, 'Access denied: LAN only\n'])
  })

  it('rate limit: 429 with Retry-After and the page', async () => {
    const page = await eventually(
      () => fetchPage(LIMITED, 'busy.example.test', '/', ['Accept: */*']),
      (p) => p.status === 429,
      10_000,
      0,
    )
    expect(Number(page.header('Retry-After'))).toBeGreaterThan(0)
    expect(page.body).toMatch(/^429 Too many requests/)
    expect(page.body).toContain('busy.example.test')
  })

  it('an upstream down gives the self-retrying 502 page', async () => {
    const page = await fetchPage(CLIENT, 'down.example.test', '/', ['Accept: text/html'])
    expect(page.status).toBe(502)
    expect(page.body).toContain('<meta http-equiv="refresh" content="10">')
    expect(page.body).toContain('down.example.test')
    expect(page.body).not.toMatch(/127\.0\.0\.1|dial/)
  })

  it('the WAF block gives the 403 page', async () => {
    const page = await fetchPage(CLIENT, 'shop.example.test', '/search?q=%27%20OR%20%271%27%3D%271', ['Accept: text/html'])
    expect(page.status).toBe(403)
    expect(page.body).toContain('<h1>Access denied</h1>')
  })

  it('a source banned in the engine sees the ban page, whose request id finds its row', async () => {
    await postDecisions(cs, [{ value: BANNED, origin: 'cscli', scenario: 'manual/ban' }])
    const page = await eventually(
      () => fetchPage(BANNED, 'shop.example.test', '/banned-page', ['Accept: application/json']),
      (p) => p.status === 403,
      (POLL_SECONDS + 1) * 1000,
      100,
    )
    const body = JSON.parse(page.body)
    expect(body.host).toBe('shop.example.test')
    const [row] = await rowOf(body.request_id)
    expect(row).toMatchObject({ status: 403, remote_ip: BANNED, path: '/banned-page' })
  })
})
