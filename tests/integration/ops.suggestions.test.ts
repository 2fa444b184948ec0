import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startProxyStack, type ProxyStack } from '../support/proxy-stack'

// The dashboard's suggestions (server/utils/ops/suggestions.ts): what would make the
// proxy better, apart from the problems, so the health stays OK. The setting is
// changed through the API, which pushes to the production proxy.

let stack: ProxyStack

beforeAll(async () => {
  stack = await startProxyStack()
})
afterAll(async () => {
  await stack?.stop()
})

const health = async () => (await stack.panel.request('/api/dashboard/health', { cookie: stack.admin })).json
const setCompression = (on: boolean) =>
  stack.panel.request('/api/settings', { method: 'PUT', cookie: stack.admin, body: { 'proxy.compression': on } })

describe('suggestions on the dashboard health', () => {
  it('a new panel compresses: no suggestion', async () => {
    expect((await stack.panel.request('/api/settings', { cookie: stack.admin })).json['proxy.compression']).toBe(true)
    expect((await health()).suggestions).toEqual([])
  })

  it('compression off: the suggestion with its link to the field in Settings, and no problem added', async () => {
    const kinds = (h: { problems: Array<{ kind: string }> }) => h.problems.map((p) => p.kind)
    const before = kinds(await health())
    expect((await setCompression(false)).status).toBe(200)
    const h = await health()
    expect(h.suggestions).toEqual([
      {
        kind: 'compression_off',
        text: expect.stringMatching(/^Compression is off: turning it on makes pages/),
        fix: { to: '/settings#setting-proxy-compression', text: 'Compression in Settings' },
      },
    ])
    // Not a problem: the health list is the one of before.
    expect(kinds(h)).toEqual(before)
    expect(JSON.stringify(h.problems)).not.toMatch(/compress/i)
  })

  it('compression on again: no suggestion', async () => {
    expect((await setCompression(true)).status).toBe(200)
    expect((await health()).suggestions).toEqual([])
  })
})
