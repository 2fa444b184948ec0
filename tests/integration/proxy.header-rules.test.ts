import { request as httpsRequest } from 'node:https'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestPki, type TestPki } from '../support/certs'
import { eventually, httpRequest, type RawResponse } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'

// Header rules through the production Caddy (docs/hosts.md, "Header rules"): the test
// upstream records the headers it gets and answers with a header of its own, so both
// directions are checked on the real wire; HSTS is checked over HTTPS with an uploaded
// certificate and over plain HTTP.

const PLAIN = 'rules.example.test'
const SECURE = 'secure.example.test'
let stack: ProxyStack
let up: TestUpstream
let pki: TestPki
let plainId: number
let secureId: number

const RULES = [
  { direction: 'request', action: 'set', name: 'X-Tenant', value: 'blue' },
  { direction: 'request', action: 'add', name: 'X-Tag', value: 'from-proxy' },
  { direction: 'request', action: 'remove', name: 'X-Debug', value: null },
  { direction: 'response', action: 'set', name: 'X-Served-By', value: 'edge' },
  { direction: 'response', action: 'remove', name: 'X-Powered-By', value: null },
]

function httpsGet(host: string, path = '/'): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: stack.httpsPort,
        path,
        servername: host,
        ca: pki.rootPem,
        headers: { host },
        agent: false,
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }))
      },
    )
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end()
  })
}

beforeAll(async () => {
  up = await startTestUpstream()
  up.setResponseHeader('X-Powered-By', 'upstream-framework')
  stack = await startProxyStack()
  pki = createTestPki()
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const plain = await createHost(stack, {
    domain: PLAIN,
    target_group_id: group.id,
    header_rules: RULES,
    upstream_host: 'internal.app.test',
    security_headers: true,
    csp: { mode: 'report-only', policy: "default-src 'self'" },
    hsts: { max_age: 600, include_subdomains: false, preload: false },
  })
  expect(plain.status, plain.text).toBe(201)
  plainId = plain.json.id
  const secure = await createHost(stack, { domain: SECURE, target_group_id: group.id })
  secureId = secure.json.id
  const leaf = pki.leaf(SECURE)
  const form = new FormData()
  for (const [k, v] of Object.entries({ cert_pem: leaf.certPem, key_pem: leaf.keyPem, chain_pem: pki.intermediatePem }))
    form.append(k, new Blob([v], { type: 'application/x-pem-file' }), `${k}.pem`)
  const upload = await stack.panel.request(`/api/manual-certs/${secureId}`, { method: 'POST', cookie: stack.admin, form })
  expect(upload.status, upload.text).toBe(201)
  const put = await stack.panel.request(`/api/hosts/${secureId}`, {
    method: 'PUT',
    cookie: stack.admin,
    body: {
      domain: SECURE,
      target_group_id: group.id,
      tls_mode: 'manual',
      hsts: { max_age: 31_536_000, include_subdomains: true, preload: true },
    },
  })
  expect(put.status, put.text).toBe(200)
})
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

describe('header rules through the production proxy', () => {
  it('request rules reach the upstream: set, add, remove, and the Host override', async () => {
    const res = await httpRequest({
      port: stack.httpPort,
      host: PLAIN,
      path: '/request-rules',
      headers: { 'X-Tenant': 'red', 'X-Tag': 'from-client', 'X-Debug': '1' },
    })
    expect(res.status).toBe(200)
    const seen = up.requests.findLast((r) => r.url === '/request-rules')!.headers
    expect(seen['x-tenant']).toBe('blue')
    expect(seen['x-tag']).toBe('from-client, from-proxy')
    expect(seen['x-debug']).toBeUndefined()
    expect(seen.host).toBe('internal.app.test')
  })

  it('response rules and presets reach the client; the upstream header named in a remove rule does not', async () => {
    const res = await httpRequest({ port: stack.httpPort, host: PLAIN, path: '/response-rules' })
    expect(res.headers['x-served-by']).toBe('edge')
    expect(res.headers['x-powered-by']).toBeUndefined()
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(res.headers['x-frame-options']).toBe('SAMEORIGIN')
    expect(res.headers['referrer-policy']).toBe('strict-origin-when-cross-origin')
    expect(res.headers['permissions-policy']).toMatch(/camera=\(\)/)
    expect(res.headers['content-security-policy-report-only']).toBe("default-src 'self'")
    expect(res.headers['content-security-policy']).toBeUndefined()
  })

  it('HSTS is never sent over plain HTTP', async () => {
    const res = await httpRequest({ port: stack.httpPort, host: PLAIN, path: '/hsts' })
    expect(res.status).toBe(200)
    expect(res.headers['strict-transport-security']).toBeUndefined()
    const redirect = await httpRequest({ port: stack.httpPort, host: SECURE, path: '/hsts' })
    expect(redirect.status).toBe(308)
    expect(redirect.headers['strict-transport-security']).toBeUndefined()
  })

  it('HSTS with its flags is sent over HTTPS', async () => {
    const res = await eventually(
      () => httpsGet(SECURE, '/hsts'),
      (r) => (r as RawResponse).status === 200,
    )
    expect(res.status, String(res)).toBe(200)
    expect(res.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains; preload')
  })

  it('refuses an identity header with a clear message and changes nothing', async () => {
    const before = (await stack.panel.request(`/api/hosts/${plainId}`, { cookie: stack.admin })).json
    const res = await stack.panel.request(`/api/hosts/${plainId}`, {
      method: 'PUT',
      cookie: stack.admin,
      body: {
        domain: PLAIN,
        target_group_id: before.target_group_id,
        tls_mode: 'none',
        header_rules: [{ direction: 'request', action: 'set', name: 'X-Auth-User', value: 'admin' }],
      },
    })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/header_rules\.0\.name: is refused: X-Auth-User: the X-Auth-\* headers .* set by the panel only/)
    expect((await stack.panel.request(`/api/hosts/${plainId}`, { cookie: stack.admin })).json.header_rules).toEqual(before.header_rules)
  })

  it('the dry run shows the resulting header set in the configuration diff', async () => {
    const before = (await stack.panel.request(`/api/hosts/${plainId}`, { cookie: stack.admin })).json
    const res = await stack.panel.request(`/api/hosts/${plainId}?dry_run=1`, {
      method: 'PUT',
      cookie: stack.admin,
      body: {
        domain: PLAIN,
        target_group_id: before.target_group_id,
        tls_mode: 'none',
        header_rules: [...RULES, { direction: 'response', action: 'set', name: 'X-Preview-Only', value: 'yes' }],
      },
    })
    expect(res.status, res.text).toBe(200)
    expect(res.json.would_push).toBe(true)
    expect(JSON.stringify(res.json.config_diff)).toContain('X-Preview-Only')
    const after = await httpRequest({ port: stack.httpPort, host: PLAIN, path: '/after-dry-run' })
    expect(after.headers['x-preview-only']).toBeUndefined()
  })
})
