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
    expect(diffDesiredState({}, { rules: { 5: { id: 5, path: '/api/*' } } })).toEqual([
      {
        part: 'rules',
        key: '5',
        label: 'rule 5 /api/*',
        change: 'added',
        fields: [
          { field: 'id', before: null, after: 5 },
          { field: 'path', before: null, after: '/api/*' },
        ],
      },
    ])
  })
})
