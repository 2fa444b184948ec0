import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { createPublicClientNamespace } from '../support/netns'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// Setting proxy.unknown_host_answer (docs/hosts.md, "Unknown hosts") through the production
// Caddy, from a public client in a network namespace.

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let ns: Awaited<ReturnType<typeof createPublicClientNamespace>>

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: '198.51.100.1', clientAddresses: ['198.51.100.10'] })
  stack = await startProxyStack({ httpListenExtra: ['198.51.100.1'] })
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  expect((await createHost(stack, { domain: 'known.example.test', target_group_id: group.id })).status).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

const fromNamespace = (host: string) => ns.curl(`http://198.51.100.1:${stack.httpPort}/`, ['-H', `Host: ${host}`])
async function setAnswer(answer: string) {
  const res = await stack.panel.request('/api/settings', {
    method: 'PUT',
    cookie: stack.admin,
    body: { 'proxy.unknown_host_answer': answer },
  })
  return res
}

describe('the answer to a Host no host names, through the production proxy', () => {
  it('a new panel answers 404 with the one-line text, as before the setting', async () => {
    expect((await stack.panel.request('/api/settings', { cookie: stack.admin })).json['proxy.unknown_host_answer']).toBe('404')
    const res = await fromNamespace('nobody.example.test')
    expect(res.status).toBe(404)
    expect(res.body).toBe('No site is configured for this host name.\n')
  })

  it('an unknown answer is refused with what to write, changing nothing', async () => {
    const res = await setAnswer('410')
    expect(res.status).toBe(400)
    expect(res.json.error).toContain('must be 404, 421 or close')
    expect((await fromNamespace('nobody.example.test')).status).toBe(404)
  })

  it('421: Misdirected Request on the plain server too', async () => {
    expect((await setAnswer('421')).status).toBe(200)
    const res = await fromNamespace('nobody.example.test')
    expect(res.status).toBe(421)
    expect(res.body).toBe('No site is configured for this host name.\n')
    // A known host is untouched.
    expect((await fromNamespace('known.example.test')).status).toBe(200)
  })

  it('close: the connection is closed without a byte of an answer (curl: empty reply)', async () => {
    expect((await setAnswer('close')).status).toBe(200)
    const res = await fromNamespace('nobody.example.test')
    // curl's exit 52 is "the server closed the connection without sending anything".
    expect(res.exitCode).toBe(52)
    expect(res.status).toBe(0)
    expect(res.body).toBe('')
    // At the socket: a raw request gets no byte back before the close.
    const raw = await ns.exec('bash', [
      '-c',
      `exec 3<>/dev/tcp/198.51.100.1/${stack.httpPort}; printf 'GET / HTTP/1.1\\r\\nHost: nobody.example.test\\r\\n\\r\\n' >&3; cat <&3 | wc -c`,
    ])
    expect(raw.stdout.trim()).toBe('0')
    expect((await fromNamespace('known.example.test')).status).toBe(200)
  })

  it('back to 404 gives the text of before', async () => {
    expect((await setAnswer('404')).status).toBe(200)
    const res = await fromNamespace('nobody.example.test')
    expect(res.status).toBe(404)
    expect(res.body).toBe('No site is configured for this host name.\n')
  })
})
