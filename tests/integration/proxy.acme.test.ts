import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../support/ports'
import { startPebble } from '../support/pebble'
import { startTestUpstream } from '../support/upstream'
import { eventually, presentedCertificate } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

let stack: ProxyStack
let pebble: Awaited<ReturnType<typeof startPebble>>
let up: Awaited<ReturnType<typeof startTestUpstream>>
let issuingRoot: string
let groupId: number

beforeAll(async () => {
  const httpPort = await freePort()
  const httpsPort = await freePort()
  up = await startTestUpstream()
  pebble = await startPebble({ httpPort, tlsPort: httpsPort })
  issuingRoot = await pebble.issuingRootPem()
  stack = await startProxyStack({ httpPort, httpsPort, env: { PROXY_ACME_TRUSTED_ROOTS: pebble.caPemFile } })
  groupId = (await createGroup(stack, { name: 'acme', targets: [{ address: `127.0.0.1:${up.port}` }] })).id
})
afterAll(async () => {
  await stack?.stop()
  await pebble?.stop()
  await up?.stop()
})

describe('ACME through Pebble, with only the chosen challenge enabled', () => {
  it.each([
    ['http', 'web1.example.test'],
    ['tls-alpn', 'web2.example.test'],
  ])('tls_challenge=%s: Caddy presents a Pebble-issued certificate for %s', async (challenge, domain) => {
    const res = await createHost(stack, {
      domain,
      target_group_id: groupId,
      tls_mode: 'auto',
      tls_challenge: challenge,
      tls_acme_ca_url: pebble.directoryUrl,
      tls_email: 'ops@example.test',
    })
    expect(res.status).toBe(201)
    expect(res.json.certificate).toMatchObject({ source: 'acme' })
    const cert = await eventually(
      () => presentedCertificate(stack.httpsPort, domain, issuingRoot),
      (c) => !!c && /Pebble/.test(c.issuer),
      30_000,
      300,
    )
    expect(cert?.subject).toBe(domain)
    expect(cert?.issuer).toMatch(/Pebble/)
    expect(cert?.authorized).toBe(true)
  })
})
