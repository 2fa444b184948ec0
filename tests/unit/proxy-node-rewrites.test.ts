import { describe, expect, it } from 'vitest'
import { sharedTextOf, toNodeText } from '../../server/utils/proxy/nodes/node-records'

// A node's configuration is the shared one with text rewrites (its log folder, its own bouncer
// key); its hash is taken on the shared text it stands for. Regression: mapping back alone made
// a node still holding the shared text (its configuration of before it got a key of its own, or
// the canary's log paths) look in sync, so the loop never pushed it its own.

const node = {
  rewrites: [
    ['/logs/', '/logs/nodes/2/'],
    ['"api_key":"shared-key-000000"', '"api_key":"own-key-0000000000"'],
  ] as const,
}
const shared = '{"apps":{"crowdsec":{"api_key":"shared-key-000000"},"logging":{"output":"/logs/access.log","err":"/logs/error.log"}}}'

describe('sharedTextOf', () => {
  it("maps the node's own text back to the shared text", () => {
    const own = toNodeText(node, shared)
    expect(own).toContain('own-key-0000000000')
    expect(own).toContain('/logs/nodes/2/access.log')
    expect(sharedTextOf(node, own)).toBe(shared)
  })
  it.each([
    ['the shared text itself', shared],
    ['the shared key with the own paths', toNodeText({ rewrites: [node.rewrites[0]] }, shared)],
    ['the own key with the shared paths', toNodeText({ rewrites: [node.rewrites[1]] }, shared)],
  ])('%s is not the node configuration', (_what, text) => {
    expect(sharedTextOf(node, text)).not.toBe(shared)
  })
  it('a node without rewrites: the text as it is', () => {
    expect(sharedTextOf({ rewrites: [] }, shared)).toBe(shared)
  })
})
