import { describe, expect, it } from 'vitest'
import { heldConfigOf } from '../../server/utils/proxy/nodes/held-hash'

describe('heldConfigOf: a held configuration parsed and hashed again only when its text changed', () => {
  it('reuses the hash for the same text and parses it only when asked, recomputes for another text, keeps slots apart', () => {
    const hashed: unknown[] = []
    const hashOf = (config: unknown) => {
      hashed.push(config)
      return `h${hashed.length}`
    }
    const first = heldConfigOf('test-a', '{"apps":{"n":1}}', hashOf)
    expect(first).toMatchObject({ ok: true, hash: 'h1', config: { apps: { n: 1 } } })
    const again = heldConfigOf('test-a', '{"apps":{"n":1}}', hashOf)
    expect(again.hash).toBe('h1')
    expect(hashed).toHaveLength(1)
    expect(again.config).toEqual({ apps: { n: 1 } }) // parsed on demand
    expect(heldConfigOf('test-a', '{"apps":{"n":2}}', hashOf).hash).toBe('h2')
    expect(heldConfigOf('test-b', '{"apps":{"n":1}}', hashOf).hash).toBe('h3') // another proxy, or another kind of hash
    expect(heldConfigOf('test-a', '{"apps":{"n":1}}', hashOf).hash).toBe('h4') // a slot holds its last text only
    expect(heldConfigOf('test-a', 'null\n', hashOf)).toMatchObject({ hash: null, config: null })
    expect(hashed).toHaveLength(4)
    expect(() => heldConfigOf('test-a', '<html>', hashOf)).toThrow()
  })
})
