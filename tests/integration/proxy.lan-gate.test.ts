import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { createPublicClientNamespace } from '../support/netns'
import { httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let ns: Awaited<ReturnType<typeof createPublicClientNamespace>>

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: '198.51.100.1', clientAddresses: ['198.51.100.10'] })
  stack = await startProxyStack({ httpListenExtra: ['198.51.100.1'] })
  const group = await createGroup(stack, { name: 'lan', targets: [{ address: `127.0.0.1:${up.port}` }] })
  expect((await createHost(stack, { domain: 'lan.example.test', target_group_id: group.id, lan_only: true })).status).toBe(201)
  expect((await createHost(stack, { domain: 'open.example.test', target_group_id: group.id })).status).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

const fromNamespace = (host: string, headers: string[] = []) =>
  ns.curl(`http://198.51.100.1:${stack.httpPort}/gate`, ['-H', `Host: ${host}`, ...headers.flatMap((h) => ['-H', h])])

describe('LAN-only gate, against a client on a public address (198.51.100.10 in a network namespace)', () => {
  it('answers 403 with the short body and the upstream sees nothing', async () => {
    const before = up.requests.length
    const res = await fromNamespace('lan.example.test')
    expect(res.status).toBe(403)
    // A new panel answers its page (docs/hosts.md, "Pages"), with the gate's reason.
    expect(res.body).toMatch(/^403 Access denied.*\nAccess denied: LAN only\n/)
    expect(up.requests.length).toBe(before)
  })

  it('a spoofed X-Forwarded-For: 10.0.0.1 still gets 403', async () => {
    const before = up.requests.length
    const res = await fromNamespace('lan.example.test', ['X-Forwarded-For: 10.0.0.1', 'X-Real-IP: 10.0.0.1'])
    expect(res.status).toBe(403)
    expect(up.requests.length).toBe(before)
  })

  it('passes from loopback', async () => {
    const res = await httpRequest({ port: stack.httpPort, host: 'lan.example.test', path: '/gate' })
    expect(res.status).toBe(200)
    expect(up.requests.at(-1)!.url).toBe('/gate')
  })

  it('a host without the gate is served to the public client', async () => {
    const res = await fromNamespace('open.example.test')
    expect(res.status).toBe(200)
  })
})
