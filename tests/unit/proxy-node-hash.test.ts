import { describe, expect, it } from 'vitest'
import { buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { nodeConfigHash, nodeConfigHashOfText } from '../../server/utils/proxy/nodes/rollout'
import { buildHostSnapshot, buildSnapshot } from '../support/factories'

describe('nodeConfigHashOfText: the node hash from the serialised text', () => {
  it('equals nodeConfigHash for a built configuration, one without an admin block, and one whose first key is not admin', () => {
    const built = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot(), buildHostSnapshot({ id: 2, domain: 'b.example.test' })] }))
      .config as Record<string, unknown>
    expect(built.admin).toBeDefined()
    const cases: Array<Record<string, unknown>> = [
      built,
      { apps: { http: {} }, logging: { logs: {} } }, // no admin block
      { ...built, Aardvark: 1 }, // a key sorted before "admin": hashed the long way
      { admin: { listen: 'localhost:2019' } }, // the admin block alone
    ]
    for (const config of cases) expect(nodeConfigHashOfText(config, stableStringify(config))).toBe(nodeConfigHash(config))
    // The admin block does not count, everything else does.
    const otherAdmin = { ...built, admin: { listen: '127.0.0.1:9999' } }
    expect(nodeConfigHashOfText(otherAdmin, stableStringify(otherAdmin))).toBe(nodeConfigHash(built))
    const otherApps = { ...built, apps: {} }
    expect(nodeConfigHashOfText(otherApps, stableStringify(otherApps))).not.toBe(nodeConfigHash(built))
  })
})
