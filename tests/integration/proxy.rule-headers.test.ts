import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'

// Header rules of a path rule through the production Caddy (docs/hosts.md, "Header
// rules"): the host's rules apply everywhere, the rule's only on the paths it matches
// and after the host's, so the rule overrides a host header there.

const DOMAIN = 'rule-headers.example.test'
let stack: ProxyStack
let up: TestUpstream
let hostId: number
let ruleId: number
let groupId: number

const RULE = {
  path: '/api/*',
  action: 'proxy',
  header_rules: [
    { direction: 'request', action: 'set', name: 'X-Scope', value: 'api' },
    { direction: 'request', action: 'set', name: 'X-Api-Only', value: 'yes' },
    { direction: 'response', action: 'set', name: 'X-Served-By', value: 'api-edge' },
    { direction: 'response', action: 'set', name: 'Cache-Control', value: 'no-store' },
  ],
}
const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
  stack.panel.request(path, { cookie: stack.admin, ...(init as object) })

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack()
  groupId = (await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })).id
  const host = await createHost(stack, {
    domain: DOMAIN,
    target_group_id: groupId,
    header_rules: [
      { direction: 'request', action: 'set', name: 'X-Scope', value: 'host' },
      { direction: 'response', action: 'set', name: 'X-Served-By', value: 'host-edge' },
    ],
  })
  expect(host.status, host.text).toBe(201)
  hostId = host.json.id
  const rule = await api(`/api/hosts/${hostId}/rules`, { method: 'POST', body: RULE })
  expect(rule.status, rule.text).toBe(201)
  expect(rule.json.header_rules).toEqual(RULE.header_rules)
  ruleId = rule.json.id
})
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

describe('header rules of a path rule through the production proxy', () => {
  it('the upstream sees the rule request headers only on the rule paths, after the host ones', async () => {
    expect((await httpRequest({ port: stack.httpPort, host: DOMAIN, path: '/api/items' })).status).toBe(200)
    expect((await httpRequest({ port: stack.httpPort, host: DOMAIN, path: '/page' })).status).toBe(200)
    const onApi = up.requests.findLast((r) => r.url === '/api/items')!.headers
    const elsewhere = up.requests.findLast((r) => r.url === '/page')!.headers
    expect(onApi['x-scope']).toBe('api')
    expect(onApi['x-api-only']).toBe('yes')
    expect(elsewhere['x-scope']).toBe('host')
    expect(elsewhere['x-api-only']).toBeUndefined()
  })

  it('the client gets the rule response headers only on the rule paths, overriding the host one there', async () => {
    const onApi = await httpRequest({ port: stack.httpPort, host: DOMAIN, path: '/api/items' })
    const elsewhere = await httpRequest({ port: stack.httpPort, host: DOMAIN, path: '/page' })
    expect(onApi.headers['x-served-by']).toBe('api-edge')
    expect(onApi.headers['cache-control']).toBe('no-store')
    expect(elsewhere.headers['x-served-by']).toBe('host-edge')
    expect(elsewhere.headers['cache-control']).toBeUndefined()
  })

  it('refuses an identity header on a rule with the field path, and changes nothing', async () => {
    const before = await api(`/api/hosts/${hostId}/rules`)
    const res = await api(`/api/rules/${ruleId}`, {
      method: 'PUT',
      body: { ...RULE, header_rules: [{ direction: 'request', action: 'set', name: 'X-Auth-User', value: 'admin' }] },
    })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/^header_rules\.0\.name: is refused: X-Auth-User: the X-Auth-\* headers .* set by the panel only/)
    expect((await api(`/api/hosts/${hostId}/rules`)).json).toEqual(before.json)
    const stillApi = await httpRequest({ port: stack.httpPort, host: DOMAIN, path: '/api/again' })
    expect(up.requests.findLast((r) => r.url === '/api/again')!.headers['x-scope']).toBe('api')
    expect(stillApi.headers['x-served-by']).toBe('api-edge')
  })

  it('a change of the rule headers is a revision whose diff shows them', async () => {
    const res = await api(`/api/rules/${ruleId}`, {
      method: 'PUT',
      body: {
        ...RULE,
        header_rules: [...RULE.header_rules, { direction: 'response', action: 'set', name: 'X-Revision-Check', value: 'seen' }],
      },
    })
    expect(res.status, res.text).toBe(200)
    const [latest, previous] = (await api('/api/revisions')).json as { id: number }[]
    const diff = await api(`/api/revisions/diff?from=${previous!.id}&to=${latest!.id}`)
    expect(diff.status).toBe(200)
    expect(JSON.stringify(diff.json)).toContain('X-Revision-Check')
    expect((await httpRequest({ port: stack.httpPort, host: DOMAIN, path: '/api/x' })).headers['x-revision-check']).toBe('seen')
  })
})
