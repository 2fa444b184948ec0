import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sessionApi } from '../support/api-client'
import { generateTsigKey, startBind, type BindHandle } from '../support/bind'
import { eventually } from '../support/http'
import { registerTestSecret } from '../support/panel'
import { startPebble, type PebbleHandle } from '../support/pebble'
import { freePort } from '../support/ports'
import { makeTempDir } from '../support/processes'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// Propagation (issue 39 item 4) with two real BIND servers, Pebble and the
// production Caddy: the provider writes the challenge record to the primary,
// but the servers the record is looked for at (the provider's propagation
// servers) are a copy of the zone that never gets the update, as a secondary
// that lags for good. The proxy's ACME issuer waits the provider's propagation
// wait (10 s here) and gives up before asking the CA, and the host's failure
// says the record never appeared (dns_propagation_timeout), not a CA refusal.
// The credentials check, with the same servers and wait, says the same.

const ZONE = 'example.test'
const KEY = generateTsigKey('acme-key')
registerTestSecret(KEY.secret)

let primary: BindHandle
let stale: BindHandle
let pebble: PebbleHandle
let stack: ProxyStack
const api = sessionApi(() => ({ panel: stack.panel, cookie: stack.admin }))

beforeAll(async () => {
  primary = await startBind({ zones: [{ name: ZONE, policy: ['grant acme-key zonesub TXT'] }], keys: [KEY] })
  // The same zone, taking no update: what it answers never changes.
  stale = await startBind({ zones: [{ name: ZONE, policy: ['deny acme-key zonesub ANY'] }], keys: [KEY] })
  const httpPort = await freePort()
  const httpsPort = await freePort()
  pebble = await startPebble({ httpPort, tlsPort: httpsPort, dnsServer: primary.address, env: { PEBBLE_AUTHZREUSE: '0' } })
  const roots = join(makeTempDir('acme-roots-'), 'roots.pem')
  writeFileSync(roots, pebble.caPem)
  stack = await startProxyStack({ httpPort, httpsPort, env: { PROXY_ACME_TRUSTED_ROOTS: roots } })
})
afterAll(async () => {
  await stack?.stop()
  await pebble?.stop()
  await stale?.stop()
  await primary?.stop()
})

describe('the propagation wait (two BIND servers, Pebble, the production Caddy)', () => {
  it('the provider keeps its propagation wait and servers, and the credentials check waits for them too', async () => {
    const put = await api('/api/dns-providers/provider_c', 'PUT', {
      enabled: true,
      credentials: {
        server: primary.address,
        key_name: KEY.name,
        key_alg: KEY.algorithm,
        key: KEY.secret,
        zone: ZONE,
        propagation_timeout: '10',
        propagation_resolvers: stale.address,
      },
    })
    expect(put.status).toBe(200)
    expect(put.json).toMatchObject({ propagation_timeout: 10, propagation_resolvers: stale.address })
    const bad = await api('/api/dns-providers/provider_c', 'PUT', {
      enabled: true,
      credentials: { key: '__UNCHANGED__', server: primary.address, key_name: KEY.name, key_alg: KEY.algorithm, propagation_timeout: '5' },
    })
    expect([bad.status, bad.json.error]).toEqual([400, 'credentials.propagation_timeout: must be a whole number of seconds from 10 to 600'])
    expect((await api('/api/dns-providers/provider_c')).json.propagation_timeout).toBe(10)

    const check = await api('/api/dns-providers/provider_c/test', 'POST', { zone: ZONE })
    expect(check.status).toBe(200)
    expect(check.json.steps.map((s: any) => [s.step, s.ok])).toEqual([
      ['authenticate', true],
      ['write', true],
      ['visible', false],
      ['remove', true],
    ])
    expect(check.json.steps[2].detail).toMatch(
      new RegExp(`^record not visible after 10\\.\\d s at .*${stale.address.replace(/\./g, '\\.')}`),
    )
  })

  it('an order whose record never shows at those servers fails as a propagation timeout before the CA is asked, in words on the host and in the health problems', async () => {
    const group = await createGroup(stack, { name: 'web', targets: [{ address: '127.0.0.1:9' }] })
    const host = await createHost(stack, {
      domain: `slow.${ZONE}`,
      target_group_id: group.id,
      tls_mode: 'auto',
      tls_challenge: 'dns',
      tls_dns_provider: 'provider_c',
      tls_acme_ca_url: pebble.directoryUrl,
      tls_email: 'ops@example.test',
    })
    expect([host.status, host.json.reconcile.status]).toEqual([201, 'applied'])
    const config = (await stack.caddy.getConfig()) as any
    const policy = config.apps.tls.automation.policies.find((p: any) => p.subjects.includes(`slow.${ZONE}`))
    expect(policy.issuers[0].challenges.dns).toMatchObject({ propagation_timeout: '10s', resolvers: [stale.address] })

    const failure = (
      await eventually(
        async () => (await api(`/api/hosts/${host.json.id}`)).json.certificate,
        (c) => !!c?.last_failure,
        60_000,
        500,
      )
    ).last_failure
    expect(failure).toMatchObject({ name: `slow.${ZONE}`, operation: 'obtain', kind: 'dns_propagation_timeout' })
    expect(failure.error).toContain('timed out waiting for record to fully propagate')
    expect(failure.cause).toMatch(/^the DNS provider took the challenge TXT record but it never appeared on the DNS servers checked/)
    // The wait ran out in the proxy: the CA was never asked to validate the challenge.
    expect(failure.cause).toContain('the CA was not asked to check it')
    const health = (await api('/api/dashboard/health')).json
    expect(health.problems).toContainEqual(
      expect.objectContaining({
        kind: 'certificate_failed',
        subject: `certificate of slow.${ZONE}`,
        text: `order failed: ${failure.cause}`,
      }),
    )
    expect(JSON.stringify([failure, health])).not.toContain(KEY.secret)
  }, 90_000)
})
