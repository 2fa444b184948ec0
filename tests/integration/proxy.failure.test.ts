import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { startCrowdsec } from '../support/crowdsec'
import { registerTestSecret } from '../support/panel'
import { eventually, httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { afterLoopRuns } from '../support/loops'

let up: Awaited<ReturnType<typeof startTestUpstream>>
beforeAll(async () => {
  up = await startTestUpstream()
})
afterAll(async () => {
  await up?.stop()
})

async function hostsState(stack: ProxyStack) {
  return JSON.stringify((await stack.panel.db().execute('SELECT * FROM hosts ORDER BY id')).rows)
}

describe('the proxy rejects a configuration', () => {
  // Symptom this guards: a panel that commits before the push leaves the database
  // ahead of the proxy. Stock Caddy answers: "unknown module: http.handlers.crowdsec".
  // The local API answers (LAPI alone): with it down the push would wait for it instead.
  it("answers 502 with Caddy's own text and leaves the database unchanged", async () => {
    const cs = await startCrowdsec({ agent: false })
    registerTestSecret(cs.bouncerKey)
    const stack = await startProxyStack({
      stockCaddy: true,
      env: { PROXY_MODULES: 'crowdsec', LAPI_URL: cs.url, LAPI_BOUNCER_KEY: cs.bouncerKey },
    }).catch(async (err) => {
      await cs.stop()
      throw err
    })
    try {
      const group = await createGroup(stack, { name: 'g', targets: [{ address: `127.0.0.1:${up.port}` }] })
      const before = await hostsState(stack)
      const res = await createHost(stack, { domain: 'rejected.example.test', target_group_id: group.id })
      expect(res.status).toBe(502)
      expect(res.json.error).toMatch(/^proxy rejected configuration: .*unknown module/)
      expect(res.json.error).not.toContain(cs.bouncerKey)
      expect(await hostsState(stack)).toBe(before)
      expect((await stack.panel.request('/api/hosts', { cookie: stack.admin })).json).toEqual([])
      const health = await stack.panel.request('/api/dashboard/health', { cookie: stack.admin })
      expect(health.json.proxy.last_reconcile_status).toBe('rejected')
      expect(health.json.proxy.last_error).toMatch(/unknown module/)
      expect(stack.panel.output()).not.toContain(cs.bouncerKey)
    } finally {
      await stack.stop()
      await cs.stop()
    }
  })
})

describe('the proxy is down, then back', () => {
  it('keeps the change as pending, serves it once Caddy is back, and re-pushes after a restart with an empty config', async () => {
    const stack = await startProxyStack()
    try {
      const group = await createGroup(stack, { name: 'g', targets: [{ address: `127.0.0.1:${up.port}` }] })
      await stack.caddy.stop()
      const res = await createHost(stack, { domain: 'later.example.test', target_group_id: group.id })
      expect(res.status).toBe(201)
      expect(res.json.reconcile.status).toBe('pending')
      expect(res.json.reconcile.error).toMatch(/unreachable/)
      expect((await stack.panel.request(`/api/hosts/${res.json.id}`, { cookie: stack.admin })).status).toBe(200)
      const pending = await stack.panel.request('/api/dashboard/health', { cookie: stack.admin })
      expect(pending.json.proxy.last_reconcile_status).toBe('pending')

      await stack.caddy.restart() // comes back with only its bootstrap config
      const served = await eventually(
        () => httpRequest({ port: stack.httpPort, host: 'later.example.test' }),
        (r) => r.status === 200,
        20_000,
      )
      expect(served.status).toBe(200)
      expect(JSON.parse(served.body).upstream).toBe(up.port)

      await stack.caddy.restart()
      const again = await eventually(
        () => httpRequest({ port: stack.httpPort, host: 'later.example.test' }),
        (r) => r.status === 200,
        20_000,
      )
      expect(again.status).toBe(200)
      const health = await stack.panel.request('/api/dashboard/health', { cookie: stack.admin })
      expect(health.json.proxy).toMatchObject({ reachable: true, last_reconcile_status: 'ok' })
    } finally {
      await stack.stop()
    }
  })

  it('pushes nothing while the proxy already holds the configuration', async () => {
    const stack = await startProxyStack()
    try {
      const group = await createGroup(stack, { name: 'g', targets: [{ address: `127.0.0.1:${up.port}` }] })
      await createHost(stack, { domain: 'steady.example.test', target_group_id: group.id })
      const count = async () =>
        Number((await stack.panel.db().execute("SELECT count(*) AS n FROM logs WHERE message='proxy_reconcile'")).rows[0]!.n)
      const loads = () =>
        readFileSync(stack.caddy.logFile, 'utf8')
          .split('\n')
          .filter((l) => l.includes('"load complete"')).length
      const auditsBefore = await count()
      const loadsBefore = loads()
      await afterLoopRuns(stack.panel, stack.admin, 'proxy:reconcile', 2)
      expect(await count()).toBe(auditsBefore)
      expect(loads()).toBe(loadsBefore)
    } finally {
      await stack.stop()
    }
  })
})
