import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

let stack: ProxyStack
let groupId: number
let hostId: number

const loads = () =>
  readFileSync(stack.caddy.logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"load complete"')).length
async function tablesState() {
  const db = stack.panel.db()
  const parts = await Promise.all(['hosts', 'host_names', 'target_groups', 'rules'].map((t) => db.execute(`SELECT * FROM ${t} ORDER BY 1`)))
  return JSON.stringify(parts.map((p) => p.rows))
}

beforeAll(async () => {
  stack = await startProxyStack()
  groupId = (await createGroup(stack, { name: 'base', targets: [{ address: '127.0.0.1:9', weight: 1 }] })).id
  const host = await createHost(stack, { domain: 'taken.example.test', aliases: ['alias.example.test'], target_group_id: groupId })
  hostId = host.json.id
})
afterAll(async () => {
  await stack?.stop()
})

const hostCases: Array<[string, Record<string, unknown>, number, RegExp]> = [
  ['invalid host name', { domain: 'bad_name!.example.test' }, 400, /domain: must be a valid hostname/],
  ['quote in the name', { domain: 'a"b.example.test' }, 400, /domain: must be a valid hostname/],
  ['brace in the name', { domain: '{env.SECRET}.example.test' }, 400, /domain/],
  ['newline in the name', { domain: 'a.example.test\n' + '"x"' }, 400, /domain/],
  ['space in an alias', { domain: 'ok.example.test', aliases: ['b c.example.test'] }, 400, /aliases.0: must be a valid hostname/],
  ['duplicate domain', { domain: 'taken.example.test' }, 409, /already used by host/],
  ['domain equal to another host alias', { domain: 'alias.example.test' }, 409, /already used by host/],
  ['alias repeating the domain', { domain: 'dup.example.test', aliases: ['dup.example.test'] }, 400, /must not repeat/],
  ['unknown target group', { domain: 'x.example.test', target_group_id: 9999 }, 400, /target group 9999 does not exist/],
  ['unknown tls_mode', { domain: 'x.example.test', tls_mode: 'sometimes' }, 400, /tls_mode/],
  ['unknown tls_challenge', { domain: 'x.example.test', tls_mode: 'auto', tls_challenge: 'carrier-pigeon' }, 400, /tls_challenge/],
  [
    'dns challenge without a provider',
    { domain: 'x.example.test', tls_mode: 'auto', tls_challenge: 'dns' },
    400,
    /tls_dns_provider: is required/,
  ],
  ['a provider outside the catalogue', { domain: 'x.example.test', tls_dns_provider: 'provider_z' }, 400, /not in the catalogue/],
  [
    'a provider without credentials',
    { domain: 'x.example.test', tls_mode: 'auto', tls_challenge: 'dns', tls_dns_provider: 'provider_b' },
    400,
    /provider_b is not configured/,
  ],
  ['a wildcard without DNS-01', { domain: '*.example.test', tls_mode: 'auto', tls_challenge: 'http' }, 400, /wildcard/],
  ['a bare wildcard', { domain: '*.test' }, 400, /domain: must be a valid hostname/],
  ['non-https ACME CA', { domain: 'x.example.test', tls_mode: 'auto', tls_acme_ca_url: 'http://ca.example.test/dir' }, 400, /https/],
  ['wrong type', { domain: 'x.example.test', lan_only: 'yes' }, 400, /lan_only: must be true or false/],
  ['unknown field', { domain: 'x.example.test', upstream: 'evil' }, 400, /unknown field "upstream"/],
  ['rate limit out of range', { domain: 'x.example.test', rate_limit_rps: 0 }, 400, /rate_limit_rps/],
]

describe('hosts: bad input gets a 4xx, changes nothing and pushes nothing', () => {
  it.each(hostCases)('%s', async (_name, body, status, message) => {
    const before = await tablesState()
    const loadsBefore = loads()
    const res = await createHost(stack, { target_group_id: groupId, ...body })
    expect(res.status).toBe(status)
    expect(res.json.error).toMatch(message)
    expect(await tablesState()).toBe(before)
    expect(loads()).toBe(loadsBefore)
  })

  it('PUT of a missing host is 404; a bad id is 400', async () => {
    expect(
      (
        await stack.panel.request('/api/hosts/9999', {
          method: 'PUT',
          cookie: stack.admin,
          body: { domain: 'n.example.test', target_group_id: groupId, tls_mode: 'none' },
        })
      ).status,
    ).toBe(404)
    expect((await stack.panel.request('/api/hosts/x', { cookie: stack.admin })).status).toBe(400)
  })

  it('PUT replaces the host and keeps optional booleans that were left out', async () => {
    await stack.panel.request(`/api/hosts/${hostId}`, {
      method: 'PUT',
      cookie: stack.admin,
      body: { domain: 'taken.example.test', target_group_id: groupId, tls_mode: 'none', lan_only: true },
    })
    const res = await stack.panel.request(`/api/hosts/${hostId}`, {
      method: 'PUT',
      cookie: stack.admin,
      body: { domain: 'renamed.example.test', target_group_id: groupId, tls_mode: 'none' },
    })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ domain: 'renamed.example.test', aliases: [], lan_only: true })
    // The old names are free again.
    expect((await createHost(stack, { domain: 'alias.example.test', target_group_id: groupId })).status).toBe(201)
  })
})

const groupCases: Array<[string, Record<string, unknown>, RegExp]> = [
  ['out-of-range port', { name: 'g1', targets: [{ address: '127.0.0.1:70000' }] }, /targets.0.address: must be host:port/],
  ['missing port', { name: 'g2', targets: [{ address: '127.0.0.1' }] }, /host:port/],
  ['negative weight', { name: 'g3', targets: [{ address: '127.0.0.1:80', weight: -1 }] }, /weight: must be at least 1/],
  ['no targets', { name: 'g4', targets: [] }, /at least one target/],
  ['injected address', { name: 'g5', targets: [{ address: '127.0.0.1:80"}]' }] }, /host:port/],
  ['bad health path', { name: 'g6', targets: [{ address: 'a:1' }], health_check: { path: 'no-slash' } }, /health_check.path/],
  ['unknown lb policy', { name: 'g7', targets: [{ address: 'a:1' }], lb_policy: 'chaos' }, /lb_policy/],
  ['duplicate name', { name: 'base', targets: [{ address: 'a:1' }] }, /already exists/],
]

describe('target groups and rules: bad input', () => {
  it.each(groupCases)('group: %s', async (_name, body, message) => {
    const before = await tablesState()
    const res = await stack.panel.request('/api/target-groups', { method: 'POST', cookie: stack.admin, body })
    expect([400, 409]).toContain(res.status)
    expect(res.json.error).toMatch(message)
    expect(await tablesState()).toBe(before)
  })

  it.each([
    ['unknown group', { path: '/a', action: 'proxy', target_group_id: 4242 }, 400, /target group 4242 does not exist/],
    ['redirect without URL', { path: '/a', action: 'redirect' }, 400, /redirect_url: is required/],
    ['placeholder in a body', { path: '/a', action: 'respond', respond_body: '{env.HOME}' }, 400, /braces/],
    ['bad path', { path: 'no-slash', action: 'respond' }, 400, /path: must start with/],
    ['bad method', { path: '/a', action: 'respond', methods: ['BREW'] }, 400, /methods.0/],
  ] as const)('rule: %s', async (_name, body, status, message) => {
    const before = await tablesState()
    const res = await stack.panel.request(`/api/hosts/${hostId}/rules`, { method: 'POST', cookie: stack.admin, body })
    expect(res.status).toBe(status)
    expect(res.json.error).toMatch(message)
    expect(await tablesState()).toBe(before)
  })

  it('a rule for a host that does not exist is 404', async () => {
    const res = await stack.panel.request('/api/hosts/9999/rules', {
      method: 'POST',
      cookie: stack.admin,
      body: { path: '/a', action: 'respond' },
    })
    expect(res.status).toBe(404)
  })
})
