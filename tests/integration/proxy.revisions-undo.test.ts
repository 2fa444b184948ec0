import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// Issue 35 item 3: "Undo this change" restores the state before a revision (the previous
// revision's), checked through the production Caddy; reasons name objects, not ids; the
// configuration diff of a real change is keyed by route and handler.

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let groupId: number
let hostId: number
const DOMAIN = 'app.undo.example.test'
const ALIAS = 'www.undo.example.test'

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack()
  const group = await createGroup(stack, { name: 'undo', targets: [{ address: `127.0.0.1:${up.port}` }] })
  groupId = group.id
  const host = await createHost(stack, { domain: DOMAIN, target_group_id: groupId })
  expect(host.status, host.text).toBe(201)
  hostId = host.json.id
}, 90_000)
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

const req = (path: string, opts: { method?: string; body?: unknown } = {}) => stack.panel.request(path, { ...opts, cookie: stack.admin })
const through = (host: string) => httpRequest({ port: stack.httpPort, host, path: '/' })
const revisions = async () => (await req('/api/revisions')).json as any[]
const caddyConfig = async () => JSON.stringify(await stack.caddy.getConfig())
const auditCount = async () => Number((await stack.panel.db().execute("SELECT count(*) AS n FROM logs WHERE source = 'audit'")).rows[0]!.n)
const hostBody = (over: Record<string, unknown> = {}) => ({ domain: DOMAIN, target_group_id: groupId, tls_mode: 'none', ...over })

describe('undo a revision', () => {
  it('undoing the newest revision (an alias added) brings back the state before it: the alias answers 404 again', async () => {
    const [before] = await revisions()
    const put = await req(`/api/hosts/${hostId}`, { method: 'PUT', body: hostBody({ aliases: [ALIAS] }) })
    expect(put.status, put.text).toBe(200)
    expect((await through(ALIAS)).status).toBe(200)
    const [added] = await revisions()
    expect(added).toMatchObject({ id: before.id + 1, reason: `host ${DOMAIN} updated` })

    // The preview (dry run) says what the undo would change, and changes nothing.
    const held = await caddyConfig()
    const [revCount, audits] = [(await revisions()).length, await auditCount()]
    const preview = await req(`/api/revisions/${added.id}/undo?dry_run=1`, { method: 'POST' })
    expect(preview.status, preview.text).toBe(200)
    expect(preview.json).toMatchObject({ dry_run: true, would_push: true })
    expect(preview.json.changes).toEqual([
      { part: 'hosts', key: String(hostId), label: DOMAIN, change: 'changed', fields: [{ field: 'aliases', before: [ALIAS], after: [] }] },
    ])
    expect(await caddyConfig()).toBe(held)
    expect((await revisions()).length).toBe(revCount)
    expect(await auditCount()).toBe(audits)

    const undo = await req(`/api/revisions/${added.id}/undo`, { method: 'POST' })
    expect(undo.status, undo.text).toBe(200)
    expect(undo.json).toMatchObject({
      undone: added.id,
      reverted_to: before.id,
      reconcile: { status: 'applied' },
      revision: { reverted_to: before.id, reason: `Undo of revision ${added.id} (host ${DOMAIN} updated)` },
    })
    expect(undo.json.revision.config_hash).toBe(before.config_hash)
    expect((await req(`/api/hosts/${hostId}`)).json.aliases).toEqual([])
    expect((await through(ALIAS)).status).toBe(404)
    expect((await through(DOMAIN)).status).toBe(200)
    const audit = await stack.panel.db().execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'revision_undo'")
    expect(audit.rows).toHaveLength(1)
    expect(JSON.parse(String(audit.rows[0]!.raw))).toMatchObject({
      actor: 'admin@example.test',
      revision_id: added.id,
      restored_revision_id: before.id,
    })

    // Undoing it again has nothing left to change: the preview says so (the UI then says why).
    const again = await req(`/api/revisions/${added.id}/undo?dry_run=1`, { method: 'POST' })
    expect(again.json).toMatchObject({ dry_run: true, would_push: false, changes: [] })
  })

  it('refuses to undo the oldest revision kept (no earlier state) and an unknown one, changing nothing', async () => {
    const all = await revisions()
    const oldest = all.at(-1)!
    const held = await caddyConfig()
    const audits = await auditCount()
    const refused = await req(`/api/revisions/${oldest.id}/undo`, { method: 'POST' })
    expect(refused.status).toBe(409)
    expect(refused.json.error).toBe(
      `revision ${oldest.id} cannot be undone: it is the oldest revision the panel keeps, so the state before it is not stored; use "Restore this version" on a revision instead`,
    )
    expect((await req(`/api/revisions/${oldest.id}/undo?dry_run=1`, { method: 'POST' })).status).toBe(409)
    expect((await req('/api/revisions/999999/undo', { method: 'POST' })).status).toBe(404)
    expect((await req('/api/revisions/x/undo', { method: 'POST' })).status).toBe(400)
    expect((await revisions()).length).toBe(all.length)
    expect(await auditCount()).toBe(audits)
    expect(await caddyConfig()).toBe(held)
  })
})

describe('reasons and the configuration diff in words', () => {
  it('an access list attached to a host is named in the reason and the summary; enabling a rate limit is one added handler', async () => {
    const list = await req('/api/access-lists', {
      method: 'POST',
      body: { name: 'staff', users: [{ username: 'alice', password: 'undo-pass-1' }] },
    })
    expect(list.status, list.text).toBe(201)
    const attach = await req(`/api/hosts/${hostId}/access-list`, { method: 'PUT', body: { access_list_id: list.json.id } })
    expect(attach.status, attach.text).toBe(200)
    const [attached] = await revisions()
    expect(attached.reason).toBe(`host ${DOMAIN} now behind access list "staff"`)
    expect(attached.summary).toContainEqual(
      expect.objectContaining({ part: 'host_access_lists', label: `host ${DOMAIN} behind access list "staff"`, change: 'added' }),
    )

    // The host already has the access list's handler and the proxy: a rate limit adds one handler, nothing else moves.
    const dry = await req(`/api/hosts/${hostId}?dry_run=1`, { method: 'PUT', body: hostBody({ rate_limit_enabled: true }) })
    expect(dry.status, dry.text).toBe(200)
    const paths = (dry.json.config_diff as Array<{ path: string; change: string }>).map((d) => `${d.change} ${d.path}`)
    expect(
      paths.filter((p) => !p.startsWith('added')),
      paths.join('\n'),
    ).toEqual([])
    expect(paths.length, paths.join('\n')).toBeGreaterThan(0)
    expect(
      paths.every((p) => p.includes(`host=${DOMAIN}`) || !p.includes('routes[')),
      paths.join('\n'),
    ).toBe(true)
    expect(
      paths.some((p) => /handle\[handler=rate_limit\]$/.test(p)),
      paths.join('\n'),
    ).toBe(true)

    // Undo of the attachment: the host is open again through Caddy.
    expect((await through(DOMAIN)).status).toBe(401)
    const undo = await req(`/api/revisions/${attached.id}/undo`, { method: 'POST' })
    expect(undo.status, undo.text).toBe(200)
    expect(undo.json.revision.reason).toBe(`Undo of revision ${attached.id} (host ${DOMAIN} now behind access list "staff")`)
    expect((await through(DOMAIN)).status).toBe(200)
  })
})
