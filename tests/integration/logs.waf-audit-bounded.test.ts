import { statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream } from '../support/upstream'

// The WAF's audit log is bounded: once the panel has ingested past
// logs.waf_audit_max_bytes, the ingested part is cut from the front of the file
// while the real Coraza in the production Caddy keeps appending to it; every
// blocked request still becomes exactly one waf_audit row.

const CAP = 65_536
let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack()
  expect(
    (await stack.panel.request('/api/settings', { method: 'PUT', cookie: stack.admin, body: { 'logs.waf_audit_max_bytes': CAP } })).status,
  ).toBe(200)
  const group = await createGroup(stack, { name: 'waf', targets: [{ address: `127.0.0.1:${up.port}` }] })
  expect(
    (
      await createHost(stack, {
        domain: 'waf.example.test',
        target_group_id: group.id,
        waf_enabled: true,
        waf_mode: 'blocking',
        bouncer_enabled: false,
      })
    ).status,
  ).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

describe('the WAF audit log stays under its cap, and nothing is lost', () => {
  it('refuses a setting below 64 KiB', async () => {
    const res = await stack.panel.request('/api/settings', {
      method: 'PUT',
      cookie: stack.admin,
      body: { 'logs.waf_audit_max_bytes': 1000 },
    })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/logs\.waf_audit_max_bytes: must be at least 65536/)
  })

  it('400 blocked requests, 8 at a time, while the file is cut: 400 rows, each once, and a file below the cap', async () => {
    const file = join(stack.logDir, 'waf-audit.log')
    const total = 400
    let next = 0
    const worker = async () => {
      while (next < total) {
        const n = next++
        const res = await httpRequest({ port: stack.httpPort, host: 'waf.example.test', path: `/bounded-${n}?q=%27%20OR%20%271%27%3D%271` })
        expect(res.status).toBe(403)
      }
    }
    await Promise.all(Array.from({ length: 8 }, worker))
    const rows = await eventually(
      async () => (await stack.panel.db().execute("SELECT path FROM logs WHERE source = 'waf_audit' AND path LIKE '/bounded-%'")).rows,
      (r) => r.length >= total,
      30_000,
      250,
    )
    const paths = rows.map((r) => String(r.path).split('?')[0])
    expect(new Set(paths).size).toBe(total)
    expect(paths.length).toBe(total)
    // More than the cap was written (each entry is a few KB), and the file was cut back.
    await eventually(
      async () => statSync(file).size,
      (size) => size < CAP,
      10_000,
      200,
    )
    expect(statSync(file).size).toBeLessThan(CAP)
    // Written: what was cut plus what is left, several times the cap (each entry is a few KB).
    const cuts = [...stack.panel.output().matchAll(/WAF audit log: cut (\d+) ingested bytes/g)].map((m) => Number(m[1]))
    expect(cuts.length).toBeGreaterThanOrEqual(1)
    expect(cuts.reduce((a, b) => a + b, 0) + statSync(file).size).toBeGreaterThan(4 * CAP)
  })
})
