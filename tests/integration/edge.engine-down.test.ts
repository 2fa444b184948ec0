import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postDecisions, type CrowdsecHandle } from '../support/crowdsec'
import { startEdgeStack, type EdgeStack } from '../support/edge-stack'
import { eventually } from '../support/http'
import { freePort } from '../support/ports'
import { createGroup, createHost, type ProxyStack } from '../support/proxy-stack'
import { afterLoopRuns } from '../support/loops'

// Failing the right way while the security engine is unreachable, with the real
// engine stopped: a host that fails open keeps refusing the bans it last knew
// (even across a push, which empties the bouncer) and lets the rest through; a
// host that fails closed answers 503; security_engine_down fires once; the
// dashboard says so; everything comes back by itself when the engine does.

const CLEAN = '198.51.100.60',
  BANNED = '198.51.100.200'
let edge: EdgeStack
let cs: CrowdsecHandle
let stack: ProxyStack
let hook: Server
const delivered: Array<{ event: string }> = []
let groupId: number

beforeAll(async () => {
  const hookPort = await freePort()
  hook = createServer((req, res) => {
    let b = ''
    req.on('data', (c) => {
      b += c
    })
    req.on('end', () => {
      delivered.push(JSON.parse(b))
      res.end('ok')
    })
  })
  await new Promise<void>((r) => hook.listen(hookPort, '127.0.0.1', r))
  edge = await startEdgeStack({ clientAddresses: [CLEAN, BANNED], env: { PANEL_ENGINE_PROBE_SECONDS: '1' }, tickerSeconds: 1 })
  ;({ cs, stack } = edge)
  const api = (path: string, body: unknown) => stack.panel.request(path, { method: 'POST', cookie: stack.admin, body })
  groupId = (await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${edge.up.port}` }] })).id
  for (const body of [
    { domain: 'open.example.test', target_group_id: groupId },
    { domain: 'closed.example.test', target_group_id: groupId, engine_down_refuse: true },
    { domain: 'bare.example.test', target_group_id: groupId, engine_down_refuse: true, error_pages: 'off' },
  ]) {
    const res = await createHost(stack, body)
    expect(res.status, res.text).toBe(201)
    expect(res.json.engine_down_refuse).toBe(body.domain !== 'open.example.test')
  }
  const ch = (await api('/api/notifications/channels', { name: 'hook', type: 'webhook', config: { url: `http://127.0.0.1:${hookPort}/` } }))
    .json
  expect(
    (await api('/api/notifications/rules', { name: 'engine', events: ['security_engine_down'], channel_ids: [ch.id], throttle_seconds: 0 }))
      .status,
  ).toBe(201)
  await postDecisions(cs, [{ value: BANNED }])
})
afterAll(async () => {
  await edge?.stop()
  hook?.close()
})

const get = (from: string, host: string) => edge.get(from, host)
const statuses = async () => ({
  openClean: (await get(CLEAN, 'open.example.test')).status,
  openBanned: (await get(BANNED, 'open.example.test')).status,
  closedClean: (await get(CLEAN, 'closed.example.test')).status,
  closedBanned: (await get(BANNED, 'closed.example.test')).status,
})

describe('while the security engine is unreachable', () => {
  it('with the engine up: both hosts serve clean traffic and refuse the ban', async () => {
    const s = await eventually(statuses, (x) => x.openBanned === 403 && x.closedBanned === 403, 10_000, 200)
    expect(s).toEqual({ openClean: 200, openBanned: 403, closedClean: 200, closedBanned: 403 })
    // The panel has read the ban: it reads the engine's bans at every probe, and a whole probe ran since the ban showed.
    await afterLoopRuns(stack.panel, stack.admin, 'security:engine-probe')
  })

  it('engine stopped: the fail-open host keeps the known ban and serves the rest, the fail-closed host answers 503', async () => {
    await cs.stop()
    const s = await eventually(statuses, (x) => x.closedClean === 503, 20_000, 250)
    expect(s).toEqual({ openClean: 200, openBanned: 403, closedClean: 503, closedBanned: 503 })
    expect((await get(CLEAN, 'closed.example.test')).body).toMatch(/security engine cannot be reached/)
    // The configuration now refuses the known ban itself: the bouncer that this push restarted is empty.
    expect(JSON.stringify(await stack.caddy.getConfig())).toContain(BANNED)
  })

  it("fail-closed with pages (a new panel's default): the 503 page with the reason, the request id and Retry-After", async () => {
    const split = (raw: string) => {
      const cut = raw.indexOf('\r\n\r\n')
      return { head: raw.slice(0, cut), body: raw.slice(cut + 4) }
    }
    const text = split((await edge.get(CLEAN, 'closed.example.test', '/', ['-i'])).body)
    expect(text.head).toMatch(/^HTTP\/1\.1 503 /)
    expect(text.head).toMatch(/\r\nRetry-After: 30\r\n/i)
    expect(text.body).toMatch(/^503 The site is unavailable: .*\nService unavailable: the security engine cannot be reached\n/)
    expect(text.body).toMatch(/\nSite: closed\.example\.test\n/)
    expect(text.body).toMatch(/\nRequest id: [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$/)
    const html = await edge.get(CLEAN, 'closed.example.test', '/', ['-H', 'Accept: text/html'])
    expect(html.status).toBe(503)
    expect(html.body).toContain('<h1>The site is unavailable</h1>')
    expect(html.body).toContain('<p>Service unavailable: the security engine cannot be reached</p>')
    // A banned source gets the same answer: nothing is judged while the engine is away.
    expect((await edge.get(BANNED, 'closed.example.test')).status).toBe(503)
  })

  it('fail-closed with pages off: the bare text of before, with Retry-After', async () => {
    const r = await edge.get(CLEAN, 'bare.example.test', '/', ['-i'])
    expect(r.status).toBe(503)
    const cut = r.body.indexOf('\r\n\r\n')
    expect(r.body.slice(0, cut)).toMatch(/\r\nRetry-After: 30\r\n/i)
    expect(r.body.slice(cut + 4)).toBe('Service unavailable: the security engine cannot be reached\n')
  })

  it('a host change while it is down is applied, and the known ban still holds', async () => {
    const res = await createHost(stack, { domain: 'late.example.test', target_group_id: groupId })
    expect(res.status, res.text).toBe(201)
    expect(res.json.reconcile.status).toBe('applied')
    expect(res.json.reconcile.warnings.join('\n')).toMatch(/security engine unreachable .*refuses the 1 bans last read/)
    for (let i = 0; i < 5; i++) expect((await get(BANNED, 'open.example.test')).status).toBe(403)
    expect((await get(CLEAN, 'late.example.test')).status).toBe(200)
    expect((await get(BANNED, 'late.example.test')).status).toBe(403)
  })

  it('security_engine_down fires once, and the dashboard says so', async () => {
    await eventually(
      async () => delivered.filter((d) => d.event === 'security_engine_down').length,
      (n) => n >= 1,
      20_000,
      250,
    )
    const health = (await stack.panel.request('/api/dashboard/health', { cookie: stack.admin })).json
    expect(health.security_engine.reachable).toBe(false)
    // Two more probes, the engine still down: no second notification.
    await afterLoopRuns(stack.panel, stack.admin, 'security:engine-probe', 2)
    expect(delivered.filter((d) => d.event === 'security_engine_down')).toHaveLength(1)
  })

  it('the engine back: the fail-closed host serves again and the ban holds, with no one acting', async () => {
    await cs.restart()
    const s = await eventually(statuses, (x) => x.closedClean === 200, 30_000, 250)
    expect(s).toEqual({ openClean: 200, openBanned: 403, closedClean: 200, closedBanned: 403 })
    // Back to the normal configuration: the bouncer judges again, not a list in the configuration.
    await eventually(
      async () => JSON.stringify(await stack.caddy.getConfig()),
      (c) => !c.includes('security engine cannot be reached'),
      10_000,
      250,
    )
    // The probe loop audits the change after the push loop (which probes on its own) restored the configuration.
    const ups = await eventually(
      async () =>
        (await stack.panel.db().execute("SELECT message FROM logs WHERE source = 'audit' AND message = 'security_engine_up'")).rows.length,
      (n) => n >= 1,
      15_000,
      100,
    )
    expect(ups).toBeGreaterThanOrEqual(1)
  })
})
