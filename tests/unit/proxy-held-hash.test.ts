import { describe, expect, it } from 'vitest'
import { heldConfigHash } from '../../server/utils/proxy/held-hash'

describe('heldConfigHash: a held configuration hashed again only when its text changed', () => {
  it('reuses the hash for the same text, recomputes for another, keeps slots apart, and answers null for an empty configuration', () => {
    const calls: unknown[] = []
    const hashOf = (config: unknown) => {
      calls.push(config)
      return `h${calls.length}`
    }
    const a = { config: { apps: 1 }, text: '{"apps":1}' }
    expect(heldConfigHash('test-a', a, hashOf)).toBe('h1')
    expect(heldConfigHash('test-a', { ...a, config: { apps: 1 } }, hashOf)).toBe('h1')
    expect(calls).toHaveLength(1)
    expect(heldConfigHash('test-a', { config: { apps: 2 }, text: '{"apps":2}' }, hashOf)).toBe('h2')
    expect(heldConfigHash('test-b', a, hashOf)).toBe('h3') // another proxy, or another kind of hash
    expect(heldConfigHash('test-a', a, hashOf)).toBe('h4') // the slot holds the last text only
    expect(heldConfigHash('test-a', { config: null, text: 'null' }, hashOf)).toBeNull()
    expect(calls).toHaveLength(4)
  })
})
