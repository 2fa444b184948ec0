import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registerTestSecret, startPanel, sessionCookieOf, type PanelHandle } from '../support/panel'
import { createTestPki } from '../support/certs'
import { buildOpenApiDocument } from '../../server/utils/openapi/document'
import {
  FIELD_ERROR_FORM,
  createFixtures,
  documentAccepts,
  documentAcceptsParameter,
  documentedOperations,
  exampleRequests,
  invalidBodies,
  invalidQueries,
  pathOf,
  snapshotStore,
  type ExampleRequest,
} from '../support/openapi-walk'

// The served reference, and a sweep over the operations the area suites do not
// reach, so that their real answers go through the contract check too
// (tests/support/openapi-contract.ts checks every response of panel.request).

let panel: PanelHandle
let cookie: string
const ADMIN = { email: 'owner@example.test', password: 'owner-password-123' }

beforeAll(async () => {
  registerTestSecret(ADMIN.password, 'viewer-password-1', 'contract-hook-secret')
  panel = await startPanel({ setupAdmin: false, env: { PANEL_DOMAIN: 'panel.example.test' } })
})
afterAll(async () => {
  await panel?.stop()
})

describe('first run and sessions', () => {
  it('creates the first admin through /api/setup and reads the session', async () => {
    expect((await panel.request('/api/setup')).json).toEqual({ needs_setup: true })
    const setup = await panel.request('/api/setup', { method: 'POST', body: { ...ADMIN, name: 'Owner' } })
    expect(setup.status).toBe(201)
    cookie = sessionCookieOf(setup)!
    expect(cookie).toMatch(/^panel_session=/)
    expect((await panel.request('/api/setup', { method: 'POST', body: ADMIN })).status).toBe(409)
    expect((await panel.request('/api/auth/session', { cookie })).json.user.email).toBe(ADMIN.email)
    expect((await panel.request('/api/auth/providers')).json.local).toBe(true)
  })

  it('answers ForwardAuth with the X-Auth headers, or a redirect to the login page', async () => {
    const ok = await panel.request('/auth/forward', { cookie })
    expect(ok.status).toBe(200)
    expect(ok.headers.get('x-auth-user')).toBe(ADMIN.email)
    const away = await panel.request('/auth/forward', {
      headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'app.example.test', 'x-forwarded-uri': '/x' },
    })
    expect(away.status).toBe(302)
  })
})

describe('the reference itself', () => {
  it('serves the document built from the registry, to a session only', async () => {
    const res = await panel.request('/api/openapi.json', { cookie })
    expect(res.status).toBe(200)
    expect(res.json).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument())))
    expect((await panel.request('/api/openapi.json')).status).toBe(401)
  })

  it('renders every operation in a self-contained page', async () => {
    const res = await panel.request('/api/docs', { cookie })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/html/)
    expect(res.text).not.toMatch(/<script|<link|src="http/)
    for (const path of Object.keys(buildOpenApiDocument().paths)) expect(res.text).toContain(path.replace(/&/g, '&amp;'))
  })
})

describe('operations the area suites leave out', () => {
  it('users: create, read, replace, list, delete', async () => {
    const created = await panel.request('/api/users', {
      method: 'POST',
      cookie,
      body: { email: 'viewer@example.test', password: 'viewer-password-1', role: 'viewer' },
    })
    expect(created.status).toBe(201)
    const id = created.json.id
    expect((await panel.request(`/api/users/${id}`, { cookie })).status).toBe(200)
    expect(
      (
        await panel.request(`/api/users/${id}`, {
          method: 'PUT',
          cookie,
          body: { email: 'viewer@example.test', name: 'Viewer', role: 'viewer' },
        })
      ).json.name,
    ).toBe('Viewer')
    expect((await panel.request('/api/users', { cookie })).json).toHaveLength(2)
    expect((await panel.request(`/api/users/${id}`, { method: 'DELETE', cookie })).status).toBe(204)
    expect((await panel.request(`/api/users/${id}`, { cookie })).status).toBe(404)
  })

  it('target groups, hosts and path rules (proxy unreachable: pending)', async () => {
    const group = await panel.request('/api/target-groups', {
      method: 'POST',
      cookie,
      body: { name: 'app', targets: [{ address: '127.0.0.1:9' }] },
    })
    expect(group.status).toBe(201)
    expect((await panel.request('/api/target-groups', { cookie })).json).toHaveLength(1)
    expect((await panel.request(`/api/target-groups/${group.json.id}`, { cookie })).status).toBe(200)
    const put = await panel.request(`/api/target-groups/${group.json.id}`, {
      method: 'PUT',
      cookie,
      body: { name: 'app', targets: [{ address: '127.0.0.1:10', weight: 2 }], health_check: { path: '/healthz' } },
    })
    expect(put.status).toBe(200)
    const host = await panel.request('/api/hosts', {
      method: 'POST',
      cookie,
      body: { domain: 'app.example.test', target_group_id: group.json.id, tls_mode: 'none' },
    })
    expect(host.status).toBe(201)
    const rule = await panel.request(`/api/hosts/${host.json.id}/rules`, {
      method: 'POST',
      cookie,
      body: { path: '/old/*', action: 'redirect', redirect_url: '/new', redirect_status: 301 },
    })
    expect(rule.status).toBe(201)
    expect((await panel.request(`/api/hosts/${host.json.id}/rules`, { cookie })).json).toHaveLength(1)
    expect(
      (
        await panel.request(`/api/rules/${rule.json.id}`, {
          method: 'PUT',
          cookie,
          body: { path: '/old/*', action: 'respond', respond_status: 410, respond_body: 'gone' },
        })
      ).status,
    ).toBe(200)
    expect((await panel.request(`/api/rules/${rule.json.id}`, { method: 'DELETE', cookie })).status).toBe(204)
    expect((await panel.request(`/api/target-groups/${group.json.id}`, { method: 'DELETE', cookie })).status).toBe(409)
  })

  it('manual certificate upload and download', async () => {
    const group = (await panel.request('/api/target-groups', { cookie })).json[0]
    const host = await panel.request('/api/hosts', {
      method: 'POST',
      cookie,
      body: { domain: 'manual.example.test', target_group_id: group.id, tls_mode: 'none' },
    })
    const pki = createTestPki()
    const leaf = pki.leaf('manual.example.test')
    const form = new FormData()
    form.append('cert_pem', new Blob([leaf.certPem]), 'cert.pem')
    form.append('key_pem', new Blob([leaf.keyPem]), 'key.pem')
    form.append('chain_pem', new Blob([pki.intermediatePem]), 'chain.pem')
    const up = await panel.request(`/api/manual-certs/${host.json.id}`, { method: 'POST', cookie, form })
    expect(up.status).toBe(201)
    const download = await panel.request(`/api/manual-certs/${host.json.id}/download`, { cookie })
    expect(download.status).toBe(200)
    expect(download.text).toContain('BEGIN CERTIFICATE')
    expect(download.text).not.toContain('PRIVATE KEY')
  })

  it('notification channels and rules: replace, list, delete', async () => {
    const channel = await panel.request('/api/notifications/channels', {
      method: 'POST',
      cookie,
      body: { name: 'hook', type: 'webhook', config: { url: 'http://127.0.0.1:9/hook', secret: 'contract-hook-secret' } },
    })
    expect(channel.status).toBe(201)
    expect(channel.json.config.secret).toBe('__SET__')
    const replaced = await panel.request(`/api/notifications/channels/${channel.json.id}`, {
      method: 'PUT',
      cookie,
      body: { name: 'hook 2', type: 'webhook', config: { url: 'http://127.0.0.1:9/hook2', secret: '__UNCHANGED__' } },
    })
    expect(replaced.status).toBe(200)
    const rule = await panel.request('/api/notifications/rules', {
      method: 'POST',
      cookie,
      body: { name: 'r', events: ['backup_failed'], channel_ids: [channel.json.id] },
    })
    expect(rule.status).toBe(201)
    expect((await panel.request('/api/notifications/rules', { cookie })).json).toHaveLength(1)
    expect(
      (
        await panel.request(`/api/notifications/rules/${rule.json.id}`, {
          method: 'PUT',
          cookie,
          body: { name: 'r2', events: ['backup_failed', 'config_change'], channel_ids: [channel.json.id], throttle_seconds: 60 },
        })
      ).status,
    ).toBe(200)
    expect((await panel.request(`/api/notifications/rules/${rule.json.id}`, { method: 'DELETE', cookie })).status).toBe(204)
    expect((await panel.request(`/api/notifications/channels/${channel.json.id}`, { method: 'DELETE', cookie })).status).toBe(204)
  })

  it('backups: take, download, delete', async () => {
    const backup = await panel.request('/api/backups', { method: 'POST', cookie })
    expect(backup.status).toBe(201)
    const download = await panel.request(`/api/backups/${backup.json.id}/download`, { cookie })
    expect(download.status).toBe(200)
    expect(download.headers.get('content-type')).toBe('application/gzip')
    expect((await panel.request(`/api/backups/${backup.json.id}`, { method: 'DELETE', cookie })).status).toBe(204)
  })

  it('errors on unknown paths keep the {error} shape; logout ends the session', async () => {
    expect((await panel.request('/api/no-such-thing', { cookie })).json).toEqual({ error: expect.any(String) })
    expect((await panel.request('/api/auth/logout', { method: 'POST', cookie })).status).toBe(204)
    expect((await panel.request('/api/auth/session', { cookie })).status).toBe(401)
  })
})

// The document is the contract: for every operation, a request the document
// accepts (checked with ajv first) is accepted, or refused only with a status
// the operation documents for a semantic reason (no such row, component down),
// and requests the document refuses (variants generated from its own schemas)
// get a 400.
describe('every operation of the document', () => {
  let examples: Record<string, ExampleRequest>
  beforeAll(async () => {
    cookie = await panel.login(ADMIN.email, ADMIN.password) // the suite above logged its session out
    examples = exampleRequests(await createFixtures(panel, cookie), ADMIN)
  })

  const operations = documentedOperations()
  it('has an example request for every operation (add one to tests/support/openapi-walk.ts)', () => {
    expect(operations.map((o) => `${o.method} ${o.template}`).filter((k) => !examples[k])).toEqual([])
  })

  it.each(operations.map((o) => [`${o.method} ${o.template}`, o] as const))('%s', async (key, op) => {
    const ex = examples[key]!
    for (const p of op.parameters) {
      const value = p.in === 'path' ? decodeURIComponent(ex.params?.[p.name] ?? '') : ex.query?.[p.name]
      if (value !== undefined)
        expect(documentAcceptsParameter(p.schema, value), `${key}: the example's ${p.name} is not schema-valid`).toBe(true)
    }
    if (op.bodySchema) expect(documentAccepts(op.bodySchema, ex.body), `${key}: the example body is not schema-valid`).toBe(true)
    // Logging out ends the session it is sent with: that one gets a session of its own; a login
    // replaces the session it carries, so public operations are walked without one (except ForwardAuth, which checks it).
    const session =
      op.template === '/api/auth/logout'
        ? await panel.login(ADMIN.email, ADMIN.password)
        : op.public && op.template !== '/auth/forward'
          ? undefined
          : cookie
    const send = (path: string, body?: unknown) =>
      panel.request(path, { method: op.method, cookie: session, body, form: op.multipart && body === undefined ? ex.form?.() : undefined })

    // Query objects are strict too, except the OIDC redirects (the identity provider may add parameters)
    // and ForwardAuth (the proxy passes the original request's query on).
    if (!op.template.startsWith('/api/auth/oidc/') && op.template !== '/auth/forward') {
      const res = await send(pathOf(op, ex.params, { ...ex.query, walk_unknown: '1' }), ex.body)
      expect(res.status, `${key} with an unknown query parameter: ${res.text.slice(0, 200)}`).toBe(400)
    }

    if (!ex.stream) {
      const res = await send(pathOf(op, ex.params, ex.query), ex.body)
      const accepted = res.status < 400 || (ex.refusals ?? []).includes(res.status)
      expect(accepted, `${key}: a schema-valid request answered ${res.status} ${res.text.slice(0, 300)}`).toBe(true)
      if (res.status >= 400) expect(op.statuses).toContain(res.status)
    }

    if (op.bodySchema) {
      for (const [what, body] of invalidBodies(op.bodySchema, ex.body as Record<string, unknown>)) {
        const res = await send(pathOf(op, ex.params, ex.query), body)
        expect([400, 422], `${key} with ${what}: answered ${res.status} ${res.text.slice(0, 200)}`).toContain(res.status)
        expect(res.json).toEqual({ error: expect.any(String) })
        if (res.status === 400) expect(res.json.error, `${key} with ${what}: not "<field path>: <sentence>"`).toMatch(FIELD_ERROR_FORM)
      }
      // No body, hence no Content-Type: a JSON route takes nothing but application/json (issue 33).
      const none = await panel.request(pathOf(op, ex.params, ex.query), { method: op.method, cookie: session })
      expect(none.status, `${key} without a body`).toBe(415)
      expect(none.json).toEqual({
        error: expect.stringMatching(/send a JSON object with Content-Type: application\/json \(none was sent\)/),
      })
    }
    for (const [what, query] of invalidQueries(op, ex.query ?? {})) {
      const res = await send(pathOf(op, ex.params, query), ex.body)
      expect([400, 422], `${key} with ${what}: answered ${res.status} ${res.text.slice(0, 200)}`).toContain(res.status)
      if (res.status === 400) expect(res.json.error, `${key} with ${what}: not "<field path>: <sentence>"`).toMatch(FIELD_ERROR_FORM)
    }
    for (const p of op.parameters.filter((x) => x.in === 'path')) {
      // A ?, a # or an encoded / where the parameter's schema does not take one.
      for (const bad of ['%3F', '%23', 'a%2Fb'].filter((v) => !documentAcceptsParameter(p.schema, decodeURIComponent(v)))) {
        const res = await send(pathOf(op, { ...ex.params, [p.name]: bad }, ex.query), ex.body)
        expect(res.status, `${key} with {${p.name}} = ${bad}: ${res.text.slice(0, 200)}`).toBe(400)
      }
    }
  })

  // "A missing row 404" (API decisions): a well-formed id or name that names nothing is a 404, never a
  // 400 (malformed) nor a 2xx, on every operation with a path parameter; the engine's rows are a 503 in
  // this walk, which has no engine, where the example says so. Nothing changes.
  it('a well-formed id or name that names nothing: 404 on every operation with a path parameter', async () => {
    const unknown = (template: string, name: string) =>
      ({ id: '999999', host_id: '999999', cc: 'ZZ', value: '198.51.100.77' })[name] ??
      (template.startsWith('/api/dns-providers/') ? 'provider_z' : 'walkauthor%2Fno-such-scenario')
    const before = await snapshotStore(panel)
    const answers: string[] = []
    const wanted: string[] = []
    for (const op of operations.filter((o) => o.parameters.some((p) => p.in === 'path'))) {
      const key = `${op.method} ${op.template}`
      const ex = examples[key]!
      const params = Object.fromEntries(op.parameters.filter((p) => p.in === 'path').map((p) => [p.name, unknown(op.template, p.name)]))
      const res = await panel.request(pathOf(op, params, ex.query), { method: op.method, cookie, body: ex.body, form: ex.form?.() })
      const engineDown = (ex.refusals ?? []).includes(503) && res.status === 503
      answers.push(`${key}: ${engineDown ? 404 : res.status}`)
      wanted.push(`${key}: 404`)
      if (res.status === 404) expect(res.json, key).toEqual({ error: expect.any(String) })
    }
    expect(answers).toEqual(wanted)
    expect(await snapshotStore(panel)).toBe(before)
  })

  it('a method a path does not serve: 405 with Allow; an over-long query: 431 with {error}', async () => {
    const res = await panel.request('/api/hosts', { method: 'PATCH', cookie, body: {} })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('GET, POST, HEAD')
    expect(res.json).toEqual({ error: expect.stringMatching(/PATCH .*GET, POST/) })
    // Outside the API only the web UI's GET exists.
    const ui = await panel.request('/nowhere', { method: 'POST', cookie })
    expect([ui.status, ui.headers.get('allow')]).toEqual([405, 'GET, HEAD'])
    const long = await panel.request(`/api/logs?query=${'a'.repeat(17 * 1024)}`, { cookie })
    expect(long.status).toBe(431)
    expect(long.json).toEqual({ error: expect.stringMatching(/16 KiB/) })
  })

  it('an encoded ? or / never reaches another route', async () => {
    const list = await panel.request('/api/users/%3F', { cookie })
    expect(list.status).toBe(400)
    expect(Array.isArray(list.json)).toBe(false)
    const before = await snapshotStore(panel)
    const toggle = await panel.request('/api/hosts/%3F/toggle', {
      method: 'POST',
      cookie,
      body: { domain: 'x.example.test', target_group_id: 1, tls_mode: 'none' },
    })
    expect(toggle.status).toBe(400)
    expect(toggle.json.error).toMatch(/^host id: /)
    expect((await panel.request('/api/dns-providers/%3F', { cookie })).status).toBe(400)
    expect(await snapshotStore(panel)).toBe(before)
  })
})
