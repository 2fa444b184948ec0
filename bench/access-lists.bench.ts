import autocannon from 'autocannon'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../tests/support/proxy-stack'
import { startTestUpstream } from '../tests/support/upstream'
import { ratioOf, reportFigures } from './report'

// Access lists through the production Caddy (docs/access-lists.md): what a
// request through basic auth costs against the same host without it, the limit
// measured in the same run. Caddy's hash_cache is what keeps a right password
// from costing one bcrypt run per request; a wrong password always costs one.
const PASSWORD = 'bench-password-123'
let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack()
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const api = (path: string, method: string, body: unknown) => stack.panel.request(path, { method, cookie: stack.admin, body })
  for (const domain of ['open.example.test', 'basic.example.test', 'ip.example.test'])
    expect((await createHost(stack, { domain, target_group_id: group.id, bouncer_enabled: false })).status).toBe(201)
  const hosts = (await api('/api/hosts', 'GET', undefined)).json as Array<{ id: number; domain: string }>
  const basic = (await api('/api/access-lists', 'POST', { name: 'users', users: [{ username: 'ann', password: PASSWORD }] })).json
  const ip = (
    await api('/api/access-lists', 'POST', {
      name: 'ip',
      default_action: 'deny',
      ip_rules: [
        { action: 'deny', source: '10.0.0.0/8' },
        { action: 'allow', source: '127.0.0.0/8' },
      ],
    })
  ).json
  await api(`/api/hosts/${hosts.find((h) => h.domain === 'basic.example.test')!.id}/access-list`, 'PUT', { access_list_id: basic.id })
  await api(`/api/hosts/${hosts.find((h) => h.domain === 'ip.example.test')!.id}/access-list`, 'PUT', { access_list_id: ip.id })
})
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

const _basic = (password: string) => `Basic ${Buffer.from(`ann:${password}`).toString('base64')}`

/** `password: 'vary'`: a new wrong password on every request, as a guesser sends (the hash cache keeps outcomes of repeats, wrong ones too). */
function run(host: string, password: string | null | 'vary', durationSeconds: number) {
  let n = 0
  return autocannon({
    url: `http://127.0.0.1:${stack.httpPort}/`,
    connections: 10,
    pipelining: 1,
    duration: durationSeconds,
    headers: { host, ...(password && password !== 'vary' ? { authorization: _basic(password) } : {}) },
    ...(password === 'vary'
      ? { requests: [{ setupRequest: (req: any) => ({ ...req, headers: { ...req.headers, authorization: _basic(`guess-${++n}`) } }) }] }
      : {}),
  })
}

it('requests per second through an access list vs the same host without one', async () => {
  await run('basic.example.test', PASSWORD, 1) // warm-up: the first right password fills the hash cache
  const open = await run('open.example.test', null, 5)
  const basic = await run('basic.example.test', PASSWORD, 5)
  const ip = await run('ip.example.test', null, 5)
  const wrong = await run('basic.example.test', 'vary', 5)
  for (const r of [open, basic, ip]) expect(r.non2xx).toBe(0)
  expect(wrong['2xx']).toBe(0)
  reportFigures('access-lists', [
    {
      what: 'no access list (the limit)',
      value: Math.round(open.requests.average),
      unit: 'req/s',
      budget: 'reference',
      withinBudget: true,
    },
    {
      what: 'IP rules (allowed source)',
      value: Math.round(ip.requests.average),
      unit: 'req/s',
      budget: 'near the limit',
      withinBudget: true,
      ratio: ratioOf(ip.requests.average, open.requests.average, 'no access list', '>= 0.8'),
    },
    {
      what: 'basic auth, right password (hash cache)',
      value: Math.round(basic.requests.average),
      unit: 'req/s',
      budget: 'near the limit',
      withinBudget: true,
      ratio: ratioOf(basic.requests.average, open.requests.average, 'no access list', '>= 0.7'),
    },
    {
      what: 'basic auth, a new wrong password each (one bcrypt each)',
      value: Math.round(wrong.requests.average),
      unit: 'req/s',
      budget: 'bounded by bcrypt',
      withinBudget: true,
    },
  ])
}, 120_000)
