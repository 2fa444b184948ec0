import { describe, expect, it } from 'vitest'
import { proxyStorageSchema } from '../../server/utils/proxy/storage/schemas'

// The storage setting's own checks (docs/scaling.md): what the proxy's module would refuse
// on every node is refused here first, with what to choose instead.
const problems = (v: unknown) => {
  const r = proxyStorageSchema.safeParse(v)
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)
}

describe('proxy.storage', () => {
  it('takes the file system, and Redis in each mode with its defaults filled in', () => {
    expect(problems({ module: 'file_system' })).toEqual([])
    expect(proxyStorageSchema.parse({ module: 'redis', addresses: ['10.0.0.5:6379'] })).toMatchObject({
      mode: 'single',
      key_prefix: 'caddy',
      db: 0,
      encrypt: false,
    })
    expect(problems({ module: 'redis', mode: 'sentinel', sentinel_master: 'main', addresses: ['a:26379', 'b:26379'] })).toEqual([])
    expect(problems({ module: 'redis', mode: 'cluster', addresses: ['a:7000', 'b:7001', '[2001:db8::5]:7002'] })).toEqual([])
  })

  it('refuses what no node could run, naming the field', () => {
    expect(problems({ module: 'redis', addresses: ['a:6379', 'b:6379'] })).toEqual([
      'addresses: single mode takes one address: choose "sentinel" (the Sentinels\' addresses) or "cluster" (some of its nodes) for more',
    ])
    expect(problems({ module: 'redis', mode: 'sentinel', addresses: ['a:26379'] })[0]).toMatch(/^sentinel_master: must name the primary/)
    expect(problems({ module: 'redis', mode: 'cluster', db: 3, addresses: ['a:7000'] })).toEqual(['db: must be 0 in cluster mode'])
    expect(problems({ module: 'redis', addresses: [] })[0]).toMatch(/^addresses: must name at least one/)
    expect(problems({ module: 'redis', addresses: ['a:70000'] })[0]).toMatch(/port must be from 1 to 65535/)
    expect(problems({ module: 'redis', addresses: ['a:6379'], key_prefix: 'a b' })[0]).toMatch(/^key_prefix:/)
    expect(problems({ module: 'redis', addresses: ['a:6379'], password: 'x' })[0]).toMatch(/password/)
    expect(problems({ module: 's3' }).length).toBeGreaterThan(0)
  })
})
