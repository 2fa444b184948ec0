import { describe, expect, it } from 'vitest'
import { CONFIG_DIFF_MAX_ENTRIES, diffConfigs } from '../../server/utils/proxy/revisions/config-diff'
import { diffDesiredState, summariseChanges } from '../../server/utils/proxy/revisions/desired-state'

describe('diffConfigs — JSON paths between two configurations', () => {
  const cases: Array<{ name: string; before: unknown; after: unknown; expected: unknown[] }> = [
    { name: 'equal', before: { a: [1, { b: 2 }] }, after: { a: [1, { b: 2 }] }, expected: [] },
    {
      name: 'a changed leaf',
      before: { apps: { http: { port: 80 } } },
      after: { apps: { http: { port: 8080 } } },
      expected: [{ path: 'apps.http.port', change: 'changed', before: 80, after: 8080 }],
    },
    {
      name: 'added and removed keys',
      before: { a: 1 },
      after: { b: 2 },
      expected: [
        { path: 'a', change: 'removed', before: 1 },
        { path: 'b', change: 'added', after: 2 },
      ],
    },
    { name: 'array tail', before: { r: [1] }, after: { r: [1, 2] }, expected: [{ path: 'r[1]', change: 'added', after: 2 }] },
    {
      name: 'odd key names quoted',
      before: { 'a.b': 1 },
      after: { 'a.b': 2 },
      expected: [{ path: '["a.b"]', change: 'changed', before: 1, after: 2 }],
    },
    {
      name: 'type change',
      before: { x: [1] },
      after: { x: { 0: 1 } },
      expected: [{ path: 'x', change: 'changed', before: [1], after: { 0: 1 } }],
    },
  ]
  for (const c of cases) it(c.name, () => expect(diffConfigs(c.before, c.after)).toEqual({ changes: c.expected, truncated: false }))

  it('cuts a huge diff and says so', () => {
    const before = { r: Array.from({ length: CONFIG_DIFF_MAX_ENTRIES + 50 }, (_, i) => i) }
    const r = diffConfigs(before, { r: [] })
    expect(r.changes).toHaveLength(CONFIG_DIFF_MAX_ENTRIES)
    expect(r.truncated).toBe(true)
  })
})

// Issue 35 item 3: lists of routes and handlers are matched by what they are, not where they sit.
describe('diffConfigs — routes and handlers keyed by identity', () => {
  const route = (host: string, handle: unknown[]) => ({ match: [{ host: [host] }], handle, terminal: true })
  const waf = { handler: 'waf', directives: 'SecRuleEngine On' }
  const auth = { handler: 'authentication', providers: { http_basic: { accounts: [{ username: 'alice' }] } } }
  const proxy = { handler: 'reverse_proxy', upstreams: [{ dial: '127.0.0.1:8080' }] }
  const limit = { handler: 'rate_limit', rate_limits: { zone: { events: 10, window: '1m' } } }
  const servers = (routes: unknown[]) => ({ apps: { http: { servers: { srv0: { routes } } } } })
  const base = 'apps.http.servers.srv0.routes'

  it('a handler inserted before others is one "added", not a cascade of changes', () => {
    const before = servers([route('app.example.test', [waf, auth, proxy])])
    const after = servers([route('app.example.test', [limit, waf, auth, proxy])])
    expect(diffConfigs(before, after)).toEqual({
      changes: [{ path: `${base}[host=app.example.test].handle[handler=rate_limit]`, change: 'added', after: limit }],
      truncated: false,
    })
  })

  it('a route inserted between two hosts is one "added"; the others are untouched', () => {
    const a = route('a.example.test', [proxy]),
      c = route('c.example.test', [proxy])
    const b = route('b.example.test', [waf, proxy])
    expect(diffConfigs(servers([a, c]), servers([a, b, c])).changes).toEqual([
      { path: `${base}[host=b.example.test]`, change: 'added', after: b },
    ])
  })

  it('a removed handler is one "removed"; a changed field inside a handler is addressed by the handler', () => {
    const before = servers([route('app.example.test', [waf, auth, proxy])])
    const after = servers([route('app.example.test', [{ ...waf, directives: 'SecRuleEngine DetectionOnly' }, proxy])])
    expect(diffConfigs(before, after).changes).toEqual([
      { path: `${base}[host=app.example.test].handle[handler=authentication]`, change: 'removed', before: auth },
      {
        path: `${base}[host=app.example.test].handle[handler=waf].directives`,
        change: 'changed',
        before: 'SecRuleEngine On',
        after: 'SecRuleEngine DetectionOnly',
      },
    ])
  })

  it('keys by @id first, by upstream address, by path matchers; a catch-all route is "*"', () => {
    const before = {
      routes: [
        { '@id': 'unknown_host_srv0', handle: [{ handler: 'static_response', status_code: 421 }] },
        { handle: [{ handler: 'subroute', routes: [{ match: [{ path: ['/api/*'] }], handle: [proxy] }, { handle: [proxy] }] }] },
      ],
    }
    const after = structuredClone(before) as any
    after.routes[0].handle[0].status_code = 404
    after.routes[1].handle[0].routes.unshift({
      match: [{ path: ['/admin/*'] }],
      handle: [{ handler: 'static_response', status_code: 403 }],
    })
    after.routes[1].handle[0].routes[1].handle[0] = { ...proxy, upstreams: [{ dial: '127.0.0.1:9090' }, { dial: '127.0.0.1:8080' }] }
    expect(diffConfigs(before, after).changes).toEqual([
      { path: 'routes[@id=unknown_host_srv0].handle[handler=static_response].status_code', change: 'changed', before: 421, after: 404 },
      { path: 'routes[*].handle[handler=subroute].routes[path=/admin/*]', change: 'added', after: after.routes[1].handle[0].routes[0] },
      {
        path: 'routes[*].handle[handler=subroute].routes[path=/api/*].handle[handler=reverse_proxy].upstreams[dial=127.0.0.1:9090]',
        change: 'added',
        after: { dial: '127.0.0.1:9090' },
      },
    ])
  })

  it('two handlers of one kind are told apart by their order among that kind', () => {
    const h1 = { handler: 'headers', response: { set: { a: ['1'] } } }
    const h2 = { handler: 'headers', response: { set: { b: ['2'] } } }
    expect(diffConfigs({ handle: [h1, proxy] }, { handle: [h1, h2, proxy] }).changes).toEqual([
      { path: 'handle[handler=headers#2]', change: 'added', after: h2 },
    ])
  })

  it('a change of order among the same routes is reported once, on the list', () => {
    const a = route('a.example.test', [proxy]),
      b = route('b.example.test', [proxy])
    expect(diffConfigs({ routes: [a, b] }, { routes: [b, a] }).changes).toEqual([
      {
        path: 'routes (order)',
        change: 'changed',
        before: ['host=a.example.test', 'host=b.example.test'],
        after: ['host=b.example.test', 'host=a.example.test'],
      },
    ])
  })

  it('lists of plain values stay positional', () => {
    expect(diffConfigs({ host: ['a', 'b'] }, { host: ['a', 'c'] }).changes).toEqual([
      { path: 'host[1]', change: 'changed', before: 'b', after: 'c' },
    ])
  })
})

describe('diffDesiredState — objects and fields', () => {
  const host = (over: Record<string, unknown> = {}) => ({
    id: 1,
    domain: 'a.example.test',
    aliases: [],
    enabled: true,
    wafMode: 'detection',
    updatedAt: 't1',
    ...over,
  })

  it('names added, removed and changed objects; fields in snake_case; timestamps ignored', () => {
    const before = { hosts: { 1: host(), 2: host({ id: 2, domain: 'gone.example.test' }) }, settings: { 'acme.email': { value: '' } } }
    const after = {
      hosts: { 1: host({ enabled: false, wafMode: 'blocking', updatedAt: 't2' }), 3: host({ id: 3, domain: 'new.example.test' }) },
      settings: { 'acme.email': { value: 'ops@example.test' } },
    }
    const changes = diffDesiredState(before, after)
    expect(changes).toEqual([
      {
        part: 'hosts',
        key: '1',
        label: 'a.example.test',
        change: 'changed',
        fields: [
          { field: 'enabled', before: true, after: false },
          { field: 'waf_mode', before: 'detection', after: 'blocking' },
        ],
      },
      { part: 'hosts', key: '2', label: 'gone.example.test', change: 'removed', fields: expect.any(Array) },
      { part: 'hosts', key: '3', label: 'new.example.test', change: 'added', fields: expect.any(Array) },
      {
        part: 'settings',
        key: 'acme.email',
        label: 'acme.email',
        change: 'changed',
        fields: [{ field: 'acme.email', before: '', after: 'ops@example.test' }],
      },
    ])
    expect(summariseChanges(changes)[0]).toEqual({
      part: 'hosts',
      key: '1',
      label: 'a.example.test',
      change: 'changed',
      fields: ['enabled', 'waf_mode'],
    })
  })

  it('an unchanged state (timestamps aside) has no changes; a part missing on one side counts as empty', () => {
    expect(diffDesiredState({ hosts: { 1: host() } }, { hosts: { 1: host({ updatedAt: 'later' }) } })).toEqual([])
    // A host the state does not hold is named by its number.
    expect(diffDesiredState({}, { rules: { 5: { id: 5, hostId: 2, path: '/api/*' } } })).toEqual([
      {
        part: 'rules',
        key: '5',
        label: 'rule /api/* on host 2',
        change: 'added',
        fields: [
          { field: 'id', before: null, after: 5 },
          { field: 'host_id', before: null, after: 2 },
          { field: 'path', before: null, after: '/api/*' },
        ],
      },
    ])
  })

  // Issue 35 item 4: labels name what an object points at (a host's domain, a list's name), not its id.
  it('labels attachments, rules and WAF exclusions with the names of their host and list', () => {
    const state = {
      hosts: { 3: host({ id: 3, domain: 'app.example.test' }) },
      access_lists: { 1: { id: 1, name: 'staff', users: [] } },
      host_access_lists: { 3: { hostId: 3, accessListId: 1 } },
      rules: { 7: { id: 7, hostId: 3, path: '/api/*' } },
      waf_exclusions: { 2: { id: 2, hostId: 3, ruleId: 942100, path: '/search' } },
    }
    const labels = (changes: ReturnType<typeof diffDesiredState>) =>
      changes.filter((c) => !['hosts', 'access_lists'].includes(c.part)).map((c) => [c.change, c.label])
    expect(labels(diffDesiredState({ hosts: state.hosts, access_lists: state.access_lists }, state))).toEqual([
      ['added', 'host app.example.test behind access list "staff"'],
      ['added', 'rule /api/* on app.example.test'],
      ['added', 'WAF rule 942100 off on app.example.test under /search'],
    ])
    // A removed object is named from the state it was in (its host and list may be gone now).
    expect(labels(diffDesiredState(state, {}))).toEqual([
      ['removed', 'host app.example.test behind access list "staff"'],
      ['removed', 'rule /api/* on app.example.test'],
      ['removed', 'WAF rule 942100 off on app.example.test under /search'],
    ])
  })
})
