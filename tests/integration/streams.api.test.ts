import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sessionApi } from '../support/api-client'
import { freePort } from '../support/ports'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// The /api/streams resource (docs/streams.md) against the built panel driving the
// production Caddy: every answer, its audit row, the conflicts with the proxy's own
// ports, other streams and the web hosts, dry runs and revisions. Fixtures that only
// hold ports for a conflict are disabled streams (they open no listener but keep
// their ports and names, so that enabling one can never collide).

let stack: ProxyStack
let groupId: number
let otherGroupId: number
let hostId: number
let viewer: string
let adminPort: number
const WEB = 'web.streams.example.test'
const api = sessionApi(() => ({ panel: stack.panel, cookie: stack.admin }))
const asViewer = sessionApi(() => ({ panel: stack.panel, cookie: viewer }))

beforeAll(async () => {
  stack = await startProxyStack()
  adminPort = Number(new URL(stack.caddy.adminUrl).port)
  // Targets nobody dials here: the API is under test, not the traffic.
  groupId = (await createGroup(stack, { name: 'game', targets: [{ address: `127.0.0.1:${await freePort()}` }] })).id
  otherGroupId = (await createGroup(stack, { name: 'spare', targets: [{ address: `127.0.0.1:${await freePort()}` }] })).id
  const host = await createHost(stack, { domain: WEB, target_group_id: groupId })
  expect(host.status, host.text).toBe(201)
  hostId = host.json.id
  const user = await api('/api/users', 'POST', { email: 'viewer@example.test', password: 'viewer-password-123', role: 'viewer' })
  expect(user.status, user.text).toBe(201)
  viewer = await stack.panel.login('viewer@example.test', 'viewer-password-123')
}, 120_000)
afterAll(async () => {
  await stack?.stop()
})

async function auditRows(action: string) {
  const r = await stack.panel
    .db()
    .execute({ sql: "SELECT raw FROM logs WHERE source = 'audit' AND message = ? ORDER BY id", args: [action] })
  return r.rows.map((row) => JSON.parse(String(row.raw)))
}
const streamCount = async () => Number((await stack.panel.db().execute('SELECT count(*) AS n FROM streams')).rows[0]!.n)
const auditCount = async () => Number((await stack.panel.db().execute("SELECT count(*) AS n FROM logs WHERE source = 'audit'")).rows[0]!.n)
const tcp = (name: string, listen_port: number, over: Record<string, unknown> = {}) => ({
  name,
  protocol: 'tcp',
  listen_port,
  target_group_id: groupId,
  ...over,
})

/** Creates a stream that must be accepted; answers its id. */
async function created(body: Record<string, unknown>): Promise<number> {
  const res = await api('/api/streams', 'POST', body)
  expect(res.status, res.text).toBe(201)
  return res.json.id
}

/** The request is refused with `status` and a message matching `error`, and no stream or audit row changed. */
async function refused(path: string, method: string, body: unknown, status: number, error: RegExp) {
  const [streams, audits, list] = [await streamCount(), await auditCount(), (await api('/api/streams')).json]
  const res = await api(path, method, body)
  expect(res.status, res.text).toBe(status)
  expect(res.json.error).toMatch(error)
  expect(await streamCount()).toBe(streams)
  expect(await auditCount()).toBe(audits)
  expect((await api('/api/streams')).json).toEqual(list)
}

describe('create, read, update, delete', () => {
  let id: number
  let port: number

  it('a create fills the defaults, answers every field with ports_to_publish, reconciles and writes an audit row', async () => {
    port = await freePort()
    const res = await api('/api/streams', 'POST', tcp('ssh', port))
    expect(res.status, res.text).toBe(201)
    id = res.json.id
    expect(res.json).toEqual({
      id,
      name: 'ssh',
      enabled: true,
      protocol: 'tcp',
      listen_port: port,
      listen_port_end: null,
      range_mapping: 'one_to_one',
      target_group_id: groupId,
      tls_sni: [],
      proxy_protocol: 'off',
      accept_proxy_protocol: false,
      lan_only: false,
      access_list_id: null,
      bouncer_enabled: true,
      engine_down_refuse: false,
      udp_probe_hex: null,
      ports_to_publish: `${port}/tcp`,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      reconcile: expect.objectContaining({ status: 'applied' }),
    })
    const [audit] = await auditRows('stream_create')
    expect(audit).toMatchObject({
      actor: 'admin@example.test',
      stream_id: id,
      name: 'ssh',
      protocol: 'tcp',
      ports: `${port}/tcp`,
      target_group_id: groupId,
      enabled: true,
    })
  })

  it('the list and a GET show it; an unknown id is 404', async () => {
    const { reconcile: _r, ...stored } = (await api(`/api/streams/${id}`)).json
    expect(stored).toMatchObject({ id, name: 'ssh', ports_to_publish: `${port}/tcp` })
    expect((await api('/api/streams')).json).toEqual([stored])
    const missing = await api('/api/streams/9999')
    expect(missing.status).toBe(404)
    expect(missing.json.error).toBe('stream 9999 not found')
  })

  it('a PUT changes what it sends and keeps every optional field it leaves out; null clears', async () => {
    const first = await api(`/api/streams/${id}`, 'PUT', tcp('ssh', port, { lan_only: true, proxy_protocol: 'v2', access_list_id: null }))
    expect(first.status, first.text).toBe(200)
    expect(first.json).toMatchObject({ lan_only: true, proxy_protocol: 'v2', enabled: true, reconcile: { status: 'applied' } })
    const kept = await api(`/api/streams/${id}`, 'PUT', tcp('ssh-admin', port, { enabled: false }))
    expect(kept.status, kept.text).toBe(200)
    expect(kept.json).toMatchObject({ name: 'ssh-admin', enabled: false, lan_only: true, proxy_protocol: 'v2' })
    const rows = await auditRows('stream_update')
    expect(rows).toHaveLength(2)
    expect(rows[1]).toMatchObject({ stream_id: id, name: 'ssh-admin', enabled: false })
  })

  it('a range keeps its end on a PUT that leaves it out; a new start past the kept end is a 400 naming the field', async () => {
    const rangeId = await created(tcp('range', 40100, { enabled: false, listen_port_end: 40110 }))
    const stored = (await api(`/api/streams/${rangeId}`)).json
    expect(stored.ports_to_publish).toBe(`${stored.listen_port}-${stored.listen_port_end}/tcp`)
    await refused(
      `/api/streams/${rangeId}`,
      'PUT',
      tcp('range', stored.listen_port_end + 5),
      400,
      /^listen_port_end: must be greater than listen_port/,
    )
    const cleared = await api(`/api/streams/${rangeId}`, 'PUT', tcp('range', stored.listen_port, { listen_port_end: null }))
    expect(cleared.status, cleared.text).toBe(200)
    expect(cleared.json).toMatchObject({ listen_port_end: null, ports_to_publish: `${stored.listen_port}/tcp` })
    expect((await api(`/api/streams/${rangeId}`, 'DELETE')).status).toBe(204)
  })

  it('a delete answers 204, writes an audit row, and the stream is gone', async () => {
    const res = await api(`/api/streams/${id}`, 'DELETE')
    expect(res.status, res.text).toBe(204)
    expect((await api(`/api/streams/${id}`)).status).toBe(404)
    expect((await auditRows('stream_delete')).at(-1)).toMatchObject({ stream_id: id, name: 'ssh-admin', ports: `${port}/tcp` })
    expect((await api(`/api/streams/${id}`, 'DELETE')).status).toBe(404)
  })
})

describe('bad input: 400 naming the field, nothing changed', () => {
  it.each([
    ['port 0', () => tcp('bad', 0), /^listen_port: must be between 1 and 65535/],
    ['port 70000', () => tcp('bad', 70000), /^listen_port: must be between 1 and 65535/],
    ['a range of 1,001 ports', () => tcp('bad', 41000, { listen_port_end: 42000 }), /^listen_port_end: a range holds at most 1000 ports/],
    [
      'a range ending at its start',
      () => tcp('bad', 41000, { listen_port_end: 41000 }),
      /^listen_port_end: must be greater than listen_port/,
    ],
    ['a range ending before its start', () => tcp('bad', 41000, { listen_port_end: 40999 }), /^listen_port_end: must be greater/],
    ['udp with tls_sni', () => tcp('bad', 41000, { protocol: 'udp', tls_sni: ['a.example.test'] }), /^tls_sni: .*only for "tcp"/],
    ['an unknown protocol', () => tcp('bad', 41000, { protocol: 'sctp' }), /^protocol: must be "tcp" or "udp"/],
    ['an unknown field', () => tcp('bad', 41000, { listen: 1 }), /^body: unknown field "listen"/],
  ])('%s', async (_what, body, error) => {
    // A thunk: the cases are listed before beforeAll has created the target group.
    await refused('/api/streams', 'POST', body(), 400, error)
  })

  it('a target group or an access list that does not exist', async () => {
    await refused(
      '/api/streams',
      'POST',
      tcp('bad', 41000, { target_group_id: 999 }),
      400,
      /^target_group_id: target group 999 does not exist/,
    )
    await refused(
      '/api/streams',
      'POST',
      tcp('bad', 41000, { access_list_id: 999 }),
      400,
      /^access_list_id: access list 999 does not exist/,
    )
  })

  it('an SNI name listed twice', async () => {
    await refused(
      '/api/streams',
      'POST',
      tcp('bad', 41000, { tls_sni: ['db.example.test', 'db.example.test'] }),
      400,
      /^tls_sni: "db.example.test" is listed twice/,
    )
  })
})

describe('conflicts: 409 naming who holds it, nothing changed', () => {
  it("the proxy's HTTP port, its HTTPS port without tls_sni, and its admin API port", async () => {
    await refused('/api/streams', 'POST', tcp('web', stack.httpPort), 409, /^listen_port: port \d+ is the proxy's HTTP port/)
    await refused(
      '/api/streams',
      'POST',
      tcp('tls', stack.httpsPort),
      409,
      /^listen_port: port \d+ is the proxy's HTTPS port.*only a TCP stream with tls_sni names can share it/,
    )
    await refused(
      '/api/streams',
      'POST',
      tcp('dns', stack.httpsPort, { protocol: 'udp' }),
      409,
      /^listen_port: port \d+ is the proxy's HTTPS port/,
    )
    await refused(
      '/api/streams',
      'POST',
      tcp('admin', adminPort),
      409,
      /^listen_port: port \d+ is the proxy's admin API \(PROXY_ADMIN_URL\)/,
    )
    // A range is refused for any port of it.
    await refused(
      '/api/streams',
      'POST',
      tcp('around', adminPort - 2, { listen_port_end: adminPort + 2 }),
      409,
      new RegExp(`^listen_port: the range ${adminPort - 2}-${adminPort + 2} includes port ${adminPort}, which is the proxy's admin API`),
    )
  })

  it('the HTTPS port is allowed for a TCP stream with tls_sni, noted as already published', async () => {
    const id = await created(tcp('tls-db', stack.httpsPort, { enabled: false, tls_sni: ['db.streams.example.test'] }))
    expect((await api(`/api/streams/${id}`)).json.ports_to_publish).toBe(`${stack.httpsPort}/tcp (already published for the web hosts)`)
    expect((await api(`/api/streams/${id}`, 'DELETE')).status).toBe(204)
  })

  it('a range overlapping another stream of the same protocol; the same range on the other protocol is allowed', async () => {
    const games = await created(tcp('games', 27000, { protocol: 'udp', listen_port_end: 27010, enabled: false }))
    await refused(
      '/api/streams',
      'POST',
      tcp('more games', 27005, { protocol: 'udp', listen_port_end: 27020, enabled: false }),
      409,
      new RegExp(
        `^listen_port: the range 27005-27020 includes port 27005, which is already used by stream ${games} \\("games", 27000-27010/udp\\)`,
      ),
    )
    await refused(
      '/api/streams',
      'POST',
      tcp('one game', 27010, { protocol: 'udp', enabled: false }),
      409,
      /^listen_port: port 27010 is already used by stream \d+ \("games", 27000-27010\/udp\)/,
    )
    const tcpTwin = await created(tcp('games over tcp', 27000, { listen_port_end: 27010, enabled: false }))
    // A stream does not collide with itself on a PUT.
    expect((await api(`/api/streams/${games}`, 'PUT', tcp('games', 27000, { protocol: 'udp', listen_port_end: 27010 }))).status).toBe(200)
    for (const s of [games, tcpTwin]) expect((await api(`/api/streams/${s}`, 'DELETE')).status).toBe(204)
  })

  it('two TCP streams share a port only when both route by SNI with no name in common (a wildcard counts)', async () => {
    const port = 45443
    const a = await created(tcp('tls-a', port, { enabled: false, tls_sni: ['a.example.test', '*.apps.example.test'] }))
    // Another name on the same port: fine.
    const b = await created(tcp('tls-b', port, { enabled: false, tls_sni: ['b.example.test'] }))
    await refused(
      '/api/streams',
      'POST',
      tcp('tls-c', port, { enabled: false, tls_sni: ['a.example.test'] }),
      409,
      new RegExp(`^tls_sni: "a.example.test" is already routed by stream ${a} \\("tls-a", ${port}/tcp\\) on the same port`),
    )
    await refused(
      '/api/streams',
      'POST',
      tcp('tls-c', port, { enabled: false, tls_sni: ['x.apps.example.test'] }),
      409,
      /^tls_sni: "x.apps.example.test" overlaps "\*.apps.example.test", which is already routed by stream \d+ \("tls-a"/,
    )
    // Without SNI, the port is held by the SNI streams.
    await refused(
      '/api/streams',
      'POST',
      tcp('plain', port, { enabled: false }),
      409,
      /^listen_port: port 45443 is already used by stream \d+ \("tls-a", 45443\/tcp\); two TCP streams share a port only when both route by tls_sni/,
    )
    for (const s of [a, b]) expect((await api(`/api/streams/${s}`, 'DELETE')).status).toBe(204)
  })

  it("an SNI name that is a web host's domain or alias, or a wildcard covering one", async () => {
    await refused(
      '/api/streams',
      'POST',
      tcp('steal', 45444, { enabled: false, tls_sni: [WEB] }),
      409,
      new RegExp(
        `^tls_sni: "${WEB}" is a name of web host ${hostId} \\(${WEB}\\); a name is routed to a web host or to a stream, not both`,
      ),
    )
    await refused(
      '/api/streams',
      'POST',
      tcp('steal', 45444, { enabled: false, tls_sni: ['*.streams.example.test'] }),
      409,
      new RegExp(`^tls_sni: "\\*.streams.example.test" overlaps "${WEB}", which is a name of web host ${hostId}`),
    )
  })

  it("a web host created or renamed to a stream's SNI name is refused, naming the stream", async () => {
    const sni = await created(tcp('mqtt', 45445, { enabled: false, tls_sni: ['mqtt.example.test'] }))
    const hosts = (await api('/api/hosts')).json.length
    const create = await createHost(stack, { domain: 'mqtt.example.test', target_group_id: groupId })
    expect(create.status, create.text).toBe(409)
    expect(create.json.error).toMatch(
      new RegExp(`^domain: "mqtt.example.test" is routed by TLS server name to stream ${sni} \\("mqtt", 45445/tcp\\)`),
    )
    const wildcard = await createHost(stack, { domain: '*.example.test', target_group_id: groupId, tls_mode: 'none' })
    expect(wildcard.status, wildcard.text).toBe(409)
    expect(wildcard.json.error).toMatch(
      /^domain: "\*.example.test" overlaps "mqtt.example.test", which is routed by TLS server name to stream/,
    )
    const alias = await api(`/api/hosts/${hostId}`, 'PUT', {
      domain: WEB,
      aliases: ['mqtt.example.test'],
      target_group_id: groupId,
      tls_mode: 'none',
    })
    expect(alias.status, alias.text).toBe(409)
    expect(alias.json.error).toMatch(/stream \d+ \("mqtt"/)
    expect((await api('/api/hosts')).json).toHaveLength(hosts)
    expect((await api(`/api/hosts/${hostId}`)).json.aliases).toEqual([])
    expect((await api(`/api/streams/${sni}`, 'DELETE')).status).toBe(204)
  })

  it('a taken name', async () => {
    const id = await created(tcp('taken', 45446, { enabled: false }))
    await refused('/api/streams', 'POST', tcp('taken', 45447, { enabled: false }), 409, /^name: a stream named "taken" already exists/)
    expect((await api(`/api/streams/${id}`, 'DELETE')).status).toBe(204)
  })

  it('a target group or an access list a stream uses cannot be deleted; the message names the stream', async () => {
    const list = await api('/api/access-lists', 'POST', {
      name: 'office',
      realm: 'Office',
      default_action: 'deny',
      ip_rules: [{ action: 'allow', source: '10.0.0.0/8' }],
      users: [],
    })
    expect(list.status, list.text).toBe(201)
    const id = await created(tcp('db', 45448, { enabled: false, target_group_id: otherGroupId, access_list_id: list.json.id }))
    const group = await api(`/api/target-groups/${otherGroupId}`, 'DELETE')
    expect(group.status, group.text).toBe(409)
    expect(group.json.error).toBe(`target group ${otherGroupId} is used by stream ${id} ("db"); point that stream at another group first`)
    expect((await api(`/api/target-groups/${otherGroupId}`)).status).toBe(200)
    const listDelete = await api(`/api/access-lists/${list.json.id}`, 'DELETE')
    expect(listDelete.status, listDelete.text).toBe(409)
    expect(listDelete.json.error).toMatch(new RegExp(`^access list ${list.json.id} is used by stream ${id} \\("db"\\)`))
    expect((await api(`/api/access-lists/${list.json.id}`)).status).toBe(200)
    expect((await api(`/api/streams/${id}`, 'DELETE')).status).toBe(204)
    expect((await api(`/api/access-lists/${list.json.id}`, 'DELETE')).status).toBe(204)
  })
})

describe('dry run', () => {
  it('a create, an update and a delete with ?dry_run=1 answer the changes and change nothing', async () => {
    const [streams, audits] = [await streamCount(), await auditCount()]
    const preview = await api('/api/streams?dry_run=1', 'POST', tcp('preview', 45449, { enabled: false }))
    expect(preview.status, preview.text).toBe(200)
    expect(preview.json).toMatchObject({ dry_run: true })
    expect(preview.json.changes).toEqual([expect.objectContaining({ part: 'streams', label: 'preview', change: 'added' })])
    expect(await streamCount()).toBe(streams)
    expect(await auditCount()).toBe(audits)

    const id = await created(tcp('preview', 45449, { enabled: false }))
    const audits2 = await auditCount()
    const put = await api(`/api/streams/${id}?dry_run=1`, 'PUT', tcp('preview', 45450))
    expect(put.status, put.text).toBe(200)
    expect(put.json.changes).toEqual([
      expect.objectContaining({
        part: 'streams',
        key: String(id),
        change: 'changed',
        fields: expect.arrayContaining([{ field: 'listen_port', before: 45449, after: 45450 }]),
      }),
    ])
    const del = await api(`/api/streams/${id}?dry_run=1`, 'DELETE')
    expect(del.status, del.text).toBe(200)
    expect(del.json.changes).toEqual([expect.objectContaining({ part: 'streams', key: String(id), change: 'removed' })])
    expect((await api(`/api/streams/${id}`)).json).toMatchObject({ listen_port: 45449, enabled: false })
    expect(await auditCount()).toBe(audits2)
    expect((await api(`/api/streams/${id}`, 'DELETE')).status).toBe(204)
  })
})

describe('revisions', () => {
  it('a revert brings a deleted stream back; reverting past its creation removes it, and undoing that brings it back', async () => {
    const before = (await api('/api/revisions')).json[0].id as number
    const body = tcp('kept', 45451, { enabled: false, lan_only: true, udp_probe_hex: null })
    const id = await created(body)
    // A host change records a revision whose state holds the stream (a disabled stream changes no listener).
    const hostBody = { domain: WEB, target_group_id: groupId, tls_mode: 'none' }
    expect((await api(`/api/hosts/${hostId}`, 'PUT', { ...hostBody, aliases: ['alias.streams.example.test'] })).status).toBe(200)
    const withStream = (await api('/api/revisions')).json[0]
    expect(withStream.id).toBeGreaterThan(before)
    const full = (await api(`/api/revisions/${withStream.id}`)).json
    expect(Object.values(full.desired_state.streams)).toEqual([expect.objectContaining({ id, name: 'kept', listenPort: 45451 })])
    const stored = (await api(`/api/streams/${id}`)).json

    expect((await api(`/api/streams/${id}`, 'DELETE')).status).toBe(204)
    const revert = await api(`/api/revisions/${withStream.id}/revert`, 'POST')
    expect(revert.status, revert.text).toBe(200)
    expect((await api(`/api/streams/${id}`)).json).toEqual(stored)

    // Back to before the stream existed: it goes (with the alias), in a revision of its own.
    const back = await api(`/api/revisions/${before}/revert`, 'POST')
    expect(back.status, back.text).toBe(200)
    expect(back.json.revision).toMatchObject({ reverted_to: before })
    expect((await api(`/api/streams/${id}`)).status).toBe(404)
    expect(back.json.revision.summary).toContainEqual(expect.objectContaining({ part: 'streams', label: 'kept', change: 'removed' }))

    const undo = await api(`/api/revisions/${back.json.revision.id}/undo`, 'POST')
    expect(undo.status, undo.text).toBe(200)
    expect((await api(`/api/streams/${id}`)).json).toEqual(stored)
    expect((await api(`/api/streams/${id}`, 'DELETE')).status).toBe(204)
  })
})

describe('roles', () => {
  it('a viewer reads streams and cannot create, change or delete one', async () => {
    const id = await created(tcp('watched', 45452, { enabled: false }))
    expect((await asViewer('/api/streams')).status).toBe(200)
    expect((await asViewer(`/api/streams/${id}`)).json.name).toBe('watched')
    const audits = await auditCount()
    for (const [path, method, body] of [
      ['/api/streams', 'POST', tcp('mine', 45453)],
      [`/api/streams/${id}`, 'PUT', tcp('renamed', 45452)],
      [`/api/streams/${id}`, 'DELETE', undefined],
    ] as const) {
      const res = await asViewer(path, method, body)
      expect(res.status, `${method} ${path}`).toBe(403)
      expect(res.json.error).toBe('viewers cannot change anything: ask an admin')
    }
    expect((await api(`/api/streams/${id}`)).json.name).toBe('watched')
    expect(await auditCount()).toBe(audits)
    expect((await api(`/api/streams/${id}`, 'DELETE')).status).toBe(204)
  })
})
