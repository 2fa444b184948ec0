import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { createPublicClientNamespace } from '../support/netns'
import { httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// Host kinds through the production Caddy (docs/hosts.md): requests come from a
// client on public addresses in a network namespace (198.51.100.10 and .11).

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let ns: Awaited<ReturnType<typeof createPublicClientNamespace>>
let groupId: number
const PUBLIC = '198.51.100.10'
const BYPASS = '198.51.100.11'

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: '198.51.100.1', clientAddresses: [PUBLIC, BYPASS] })
  stack = await startProxyStack({ httpListenExtra: ['198.51.100.1'] })
  groupId = (await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })).id
  const hosts = [
    { domain: 'keep.example.test', kind: 'redirect', redirect_to: 'https://new.example.test/base/', redirect_status: 308 },
    { domain: 'drop.example.test', kind: 'redirect', redirect_to: 'https://new.example.test/landing', redirect_keep_path: false },
    { domain: 'lanredir.example.test', kind: 'redirect', redirect_to: 'www.example.test', lan_only: true },
    {
      domain: 'gone.example.test',
      kind: 'static',
      static_status: 410,
      static_content_type: 'text/html; charset=utf-8',
      static_body: '<style>p{color:red}</style><p>Gone {http.request.host} {env.HOME}</p>',
    },
    {
      domain: 'maint.example.test',
      kind: 'maintenance',
      target_group_id: groupId,
      maintenance_retry_after: 120,
      maintenance_body: 'Back soon.',
      maintenance_bypass: [`${BYPASS}/32`],
    },
  ]
  for (const h of hosts) {
    const res = await createHost(stack, h)
    expect(res.status, res.text).toBe(201)
  }
})
afterAll(async () => {
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

/** A request from the namespace, with its response headers (lower-cased names). */
async function fromNamespace(host: string, path: string, fromAddress = PUBLIC) {
  const res = await ns.curl(`http://198.51.100.1:${stack.httpPort}${path}`, ['-D', '-', '-H', `Host: ${host}`], { fromAddress })
  const cut = res.body.indexOf('\r\n\r\n')
  const headers: Record<string, string> = {}
  for (const line of res.body.slice(0, cut).split('\r\n').slice(1)) {
    const i = line.indexOf(':')
    headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim()
  }
  return { status: res.status, headers, body: res.body.slice(cut + 4) }
}

describe('host kinds through the production Caddy', () => {
  it('a redirect keeps the path and query when asked, with the chosen status', async () => {
    const res = await fromNamespace('keep.example.test', '/a/b?x=1&y=%7B')
    expect(res.status).toBe(308)
    expect(res.headers.location).toBe('https://new.example.test/base/a/b?x=1&y=%7B')
  })

  it('a redirect drops them when not asked', async () => {
    const res = await fromNamespace('drop.example.test', '/a/b?x=1')
    expect(res.status).toBe(302)
    expect(res.headers.location).toBe('https://new.example.test/landing')
  })

  it('a LAN-only redirect host refuses a public source and redirects a LAN one', async () => {
    expect((await fromNamespace('lanredir.example.test', '/x')).status).toBe(403)
    const lan = await httpRequest({ port: stack.httpPort, host: 'lanredir.example.test', path: '/x?q=2' })
    expect(lan.status).toBe(302)
    expect(lan.headers.location).toBe('http://www.example.test/x?q=2')
  })

  it('a static host answers its status, type and body, the braces as typed', async () => {
    const res = await fromNamespace('gone.example.test', '/anything')
    expect(res.status).toBe(410)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.body).toBe('<style>p{color:red}</style><p>Gone {http.request.host} {env.HOME}</p>')
  })

  it('a maintenance host answers 503 with Retry-After and its page; a bypass source reaches the upstream', async () => {
    const before = up.requests.length
    const res = await fromNamespace('maint.example.test', '/page')
    expect(res.status).toBe(503)
    expect(res.headers['retry-after']).toBe('120')
    expect(res.body).toBe('Back soon.')
    expect(up.requests.length).toBe(before)
    const bypass = await fromNamespace('maint.example.test', '/page?v=1', BYPASS)
    expect(bypass.status).toBe(200)
    expect(up.requests.at(-1)!.url).toBe('/page?v=1')
  })
})

describe('host kinds through the API', () => {
  const hostCount = async () => ((await stack.panel.request('/api/hosts', { cookie: stack.admin })).json as unknown[]).length

  it('a proxy host without a target group is a 400 naming the field, and nothing changes', async () => {
    const count = await hostCount()
    const res = await createHost(stack, { domain: 'nogroup.example.test' })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/^target_group_id: a proxy host needs a target group/)
    expect(await hostCount()).toBe(count)
  })

  it('a redirect target with a placeholder or no target is refused with its field named', async () => {
    const bad = await createHost(stack, {
      domain: 'bad.example.test',
      kind: 'redirect',
      redirect_to: 'https://x.example.test/{file./etc/passwd}',
    })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatch(/^redirect_to: must be an http\(s\) URL/)
    const none = await createHost(stack, { domain: 'bad.example.test', kind: 'redirect' })
    expect(none.status).toBe(400)
    expect(none.json.error).toMatch(/^redirect_to: a redirect host needs a target/)
  })

  it('a host without a kind is a proxy host; a PUT without a kind keeps the stored one; the change is audited', async () => {
    const created = await createHost(stack, { domain: 'plain.example.test', target_group_id: groupId })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ kind: 'proxy', target_group_id: groupId })
    const list = (await stack.panel.request('/api/hosts', { cookie: stack.admin })).json as Array<Record<string, unknown>>
    const gone = list.find((h) => h.domain === 'gone.example.test')!
    const put = await stack.panel.request(`/api/hosts/${gone.id}`, {
      method: 'PUT',
      cookie: stack.admin,
      body: { domain: 'gone.example.test', tls_mode: 'none' },
    })
    expect(put.status, put.text).toBe(200)
    expect(put.json).toMatchObject({ kind: 'static', static_status: 410, target_group_id: null })
    const audit = await stack.panel.db().execute("SELECT message FROM logs WHERE source = 'audit' AND message LIKE '%host_update%'")
    expect(audit.rows.length).toBeGreaterThan(0)
  })
})
