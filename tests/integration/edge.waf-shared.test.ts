import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hostSubroutes } from '../support/factories'
import { createPublicClientNamespace, type PublicClientNamespace } from '../support/netns'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'

// Shared WAF instances (docs/waf.md): hosts whose directive text is the same use one
// compiled Coraza WAF (the proxy's panel_waf handler, deploy/proxy/caddy/wafext/shared.go);
// hosts that differ only in exclusions share one text too, each exclusion guarded by its
// host's mark. Through the production Caddy, sharing must never carry one host's exclusion
// or mode to another: hosts that differ only in an exclusion or only in mode answer
// differently to the very same request (a client sending the excluded host's mark too), and
// two identical hosts both block, also after a push that reloads.

const HOST_ADDRESS = '198.51.100.1'
const CLIENT = '198.51.100.45'
const ATTACK = "/search?q=1'%20UNION%20SELECT%20password%20FROM%20users--"
// One critical rule (CRS 920420: a content type the host does not allow) reaches the threshold alone.
const ODD_TYPE = ['-X', 'POST', '-H', 'Content-Type: text/x-odd', '--data', 'a=b']

let stack: ProxyStack
let up: TestUpstream
let ns: PublicClientNamespace
const ids: Record<string, number> = {}

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: HOST_ADDRESS, clientAddresses: [CLIENT] })
  stack = await startProxyStack({ httpListenExtra: [HOST_ADDRESS] })
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const hosts: [string, Record<string, unknown>][] = [
    ['same1.example.test', {}],
    ['same2.example.test', {}],
    ['excluded.example.test', {}],
    ['detect.example.test', { waf_mode: 'detection' }],
  ]
  for (const [domain, o] of hosts) {
    const res = await createHost(stack, {
      domain,
      target_group_id: group.id,
      waf_enabled: true,
      waf_mode: 'blocking',
      waf_profile: 'full',
      bouncer_enabled: false,
      ...o,
    })
    expect(res.status, res.text).toBe(201)
    ids[domain] = res.json.id
  }
  const ex = await api(`/api/hosts/${ids['excluded.example.test']}/waf-exclusions`, {
    method: 'POST',
    body: { rule_id: 920420, path: '/hook' },
  })
  expect(ex.status, ex.text).toBe(201)
}, 180_000)
afterAll(async () => {
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

const api = (path: string, init: { method?: string; body?: unknown } = {}) => stack.panel.request(path, { cookie: stack.admin, ...init })
const send = async (host: string, path: string, args: string[] = []) =>
  (await ns.curl(`http://${HOST_ADDRESS}:${stack.httpPort}${path}`, ['-H', `Host: ${host}`, ...args], { fromAddress: CLIENT })).status

/** The WAF handler of each host in Caddy's running configuration. */
async function loadedWafHandlers(): Promise<Map<string, any>> {
  const config = await stack.caddy.getConfig()
  const found = new Map<string, any>()
  for (const domain of Object.keys(ids))
    for (const route of hostSubroutes(config, domain))
      for (const h of route.handle ?? []) if (h.handler === 'panel_waf' || h.handler === 'waf') found.set(domain, h)
  return found
}

describe('hosts sharing compiled WAFs through the production Caddy', () => {
  it('runs the shared handler; hosts that differ only in an exclusion have one text, another mode its own', async () => {
    const handlers = await loadedWafHandlers()
    for (const d of Object.keys(ids)) expect(handlers.get(d)?.handler, d).toBe('panel_waf')
    const text = (d: string) => handlers.get(d).directives
    expect(text('same1.example.test')).toBe(text('same2.example.test'))
    expect(text('excluded.example.test')).toBe(text('same1.example.test'))
    expect(handlers.get('excluded.example.test').host_mark).toBe(String(ids['excluded.example.test']))
    expect(handlers.get('same1.example.test').host_mark).toBeUndefined()
    expect(text('detect.example.test')).not.toBe(text('same1.example.test'))
  })

  it('two identical hosts both block', async () => {
    expect(await send('same1.example.test', ATTACK)).toBe(403)
    expect(await send('same2.example.test', ATTACK)).toBe(403)
  })

  it("one host's exclusion does not reach the host without it, nor the other way round", async () => {
    const before = up.requests.length
    expect(await send('excluded.example.test', '/hook', ODD_TYPE)).toBe(200)
    // The mark is for the WAF only: the upstream never sees it.
    expect(up.requests.slice(before).map((r) => r.headers['x-panel-waf-host'])).toEqual([undefined])
    expect(await send('same1.example.test', '/hook', ODD_TYPE)).toBe(403)
    expect(await send('same2.example.test', '/hook', ODD_TYPE)).toBe(403)
    // The mark is the proxy's to set: a client sending the excluded host's mark gains nothing.
    const mark = ['-H', `X-Panel-Waf-Host: ${ids['excluded.example.test']}`]
    expect(await send('same1.example.test', '/hook', [...ODD_TYPE, ...mark])).toBe(403)
    // The excluded host still blocks what its exclusion does not cover.
    expect(await send('excluded.example.test', ATTACK)).toBe(403)
  })

  it("one host's detection mode does not reach the blocking hosts", async () => {
    expect(await send('detect.example.test', ATTACK)).toBe(200)
    expect(await send('same1.example.test', ATTACK)).toBe(403)
  })

  it('after a push that reloads Caddy, each host keeps its own behaviour', async () => {
    // Turning detection to blocking: its text becomes the identical hosts' and it shares their WAF.
    const id = ids['detect.example.test']
    // What the host's answer adds beside its fields (read-only) is left out of the PUT.
    const {
      id: _,
      created_at: _c,
      updated_at: _u,
      certificate: _cert,
      custom_handler_count: _n,
      health: _h,
      ...body
    } = (await api(`/api/hosts/${id}`)).json
    const res = await api(`/api/hosts/${id}`, { method: 'PUT', body: { ...body, waf_mode: 'blocking' } })
    expect(res.status, res.text).toBe(200)
    expect(res.json.reconcile.status).toBe('applied')
    const handlers = await loadedWafHandlers()
    expect(handlers.get('detect.example.test').directives).toBe(handlers.get('same1.example.test').directives)
    expect(await send('detect.example.test', ATTACK)).toBe(403)
    expect(await send('excluded.example.test', '/hook', ODD_TYPE)).toBe(200)
    expect(await send('same2.example.test', '/hook', ODD_TYPE)).toBe(403)
    expect(await send('same1.example.test', '/plain')).toBe(200)
  })
})
