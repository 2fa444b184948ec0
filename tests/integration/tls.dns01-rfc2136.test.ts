import { readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateTsigKey, startBind, type BindHandle } from '../support/bind'
import { eventually, presentedCertificate } from '../support/http'
import { createSecretsBox } from '../../server/utils/core/secrets'
import { registerTestSecret, TEST_MASTER_KEY } from '../support/panel'
import { startPebble, type PebbleHandle } from '../support/pebble'
import { freePort } from '../support/ports'
import { makeTempDir } from '../support/processes'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream } from '../support/upstream'
import { sessionApi } from '../support/api-client'

// DNS-01 for real with the self-hostable provider: BIND 9 serves example.test
// and takes TSIG-signed updates; Pebble validates through that BIND; the
// production Caddy (caddy-dns/rfc2136 v1.0.0) gets a name and a wildcard. Then
// the failures an operator meets (an update refused, a record the CA cannot see,
// a server that does not answer) are explained on the host, and the TSIG secret
// is rotated (the old one removed from BIND) and a renewal works without
// restarting the proxy.
//
// Renewal: Pebble issues 20-minute certificates here, and Caddy treats any
// certificate with less than 5 x its 10-minute maintenance interval left as due.
// A push that keeps a name does not re-check it (certmagic keeps it in memory,
// "already being managed"); one that drops the name evicts it, and the next that
// brings it back loads it from storage, sees it due and renews it (logger
// tls.renew). So the host is toggled off and on: two pushes, no restart.

const ZONE = 'example.test'
const KEY_1 = generateTsigKey('acme-key')
const KEY_2 = generateTsigKey('acme-key') // the rotation: same name, new secret
registerTestSecret(KEY_1.secret, KEY_2.secret)

let bind: BindHandle
let pebble: PebbleHandle
let blind: PebbleHandle
let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let issuingRoot: string
let groupId: number
let hook: Server
const delivered: Array<{ event: string; details: Record<string, any> }> = []
const hookBodies: string[] = []

const api = sessionApi(() => ({ panel: stack.panel, cookie: stack.admin }))
const putProvider = (credentials: Record<string, string>) => api('/api/dns-providers/provider_c', 'PUT', { enabled: true, credentials })
const dnsHost = (domain: string, ca = pebble.directoryUrl) =>
  createHost(stack, {
    domain,
    target_group_id: groupId,
    tls_mode: 'auto',
    tls_challenge: 'dns',
    tls_dns_provider: 'provider_c',
    tls_acme_ca_url: ca,
    tls_email: 'ops@example.test',
  })
const certificateOf = async (id: number) => (await api(`/api/hosts/${id}`)).json.certificate
const eventsFor = (domain: string) => delivered.filter((d) => d.event === 'cert_renewal_failed' && d.details.domain === domain)
const namedLog = () => readFileSync(bind.logFile, 'utf8')
/** The rfc2136 challenge the proxy holds for `domain`. */
async function pushedDnsChallenge(domain: string) {
  const config = (await stack.caddy.getConfig()) as any
  return config.apps.tls.automation.policies.find((p: any) => p.subjects.includes(domain))?.issuers[0].challenges.dns
}

beforeAll(async () => {
  bind = await startBind({
    zones: [{ name: ZONE, policy: [`deny acme-key name _acme-challenge.denied.${ZONE}. TXT`, 'grant acme-key zonesub TXT'] }],
    keys: [KEY_1],
  })
  const httpPort = await freePort()
  const httpsPort = await freePort()
  up = await startTestUpstream()
  // Authorisations are never reused, so every order (renewals too) solves DNS-01 again.
  pebble = await startPebble({
    httpPort,
    tlsPort: httpsPort,
    dnsServer: bind.address,
    certificateValiditySeconds: 1200,
    env: { PEBBLE_AUTHZREUSE: '0' },
  })
  // A CA that resolves through another DNS server (challtestsrv): it never sees what BIND serves.
  blind = await startPebble({ httpPort, tlsPort: httpsPort, env: { PEBBLE_AUTHZREUSE: '0' } })
  issuingRoot = await pebble.issuingRootPem()
  const roots = join(makeTempDir('acme-roots-'), 'roots.pem')
  writeFileSync(roots, pebble.caPem + blind.caPem)
  stack = await startProxyStack({ httpPort, httpsPort, env: { PROXY_ACME_TRUSTED_ROOTS: roots } })
  groupId = (await createGroup(stack, { name: 'web', targets: [{ address: `127.0.0.1:${up.port}` }] })).id
  const hookPort = await freePort()
  hook = createServer((req, res) => {
    let b = ''
    req.on('data', (c) => {
      b += c
    })
    req.on('end', () => {
      hookBodies.push(b)
      delivered.push(JSON.parse(b))
      res.end('ok')
    })
  })
  await new Promise<void>((r) => hook.listen(hookPort, '127.0.0.1', r))
  const ch = (
    await api('/api/notifications/channels', 'POST', { name: 'hook', type: 'webhook', config: { url: `http://127.0.0.1:${hookPort}/` } })
  ).json
  expect(
    (
      await api('/api/notifications/rules', 'POST', {
        name: 'certs',
        events: ['cert_renewal_failed'],
        channel_ids: [ch.id],
        throttle_seconds: 0,
      })
    ).status,
  ).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await pebble?.stop()
  await blind?.stop()
  await bind?.stop()
  await up?.stop()
  hook?.close()
})

describe('DNS-01 through RFC 2136 (BIND 9, TSIG), Pebble and the production Caddy', () => {
  let wwwId: number

  it('issues a name and a wildcard; the challenge records were added and are gone afterwards', async () => {
    const put = await putProvider({ server: bind.address, key_name: KEY_1.name, key_alg: KEY_1.algorithm, key: KEY_1.secret, zone: ZONE })
    expect(put.status).toBe(200)
    expect(put.json).toMatchObject({
      name: 'provider_c',
      enabled: true,
      configured: true,
      proxy_module: 'dns.providers.rfc2136',
      reconcile: { status: 'applied' },
    })
    const www = await dnsHost(`www.${ZONE}`)
    const wild = await dnsHost(`*.wild.${ZONE}`)
    expect([www.status, wild.status]).toEqual([201, 201])
    wwwId = www.json.id

    // What the proxy holds: the four module fields (not the panel's zone), and BIND as the resolver.
    expect(await pushedDnsChallenge(`www.${ZONE}`)).toEqual({
      provider: { name: 'rfc2136', server: bind.address, key_name: 'acme-key', key_alg: 'hmac-sha256', key: KEY_1.secret },
      resolvers: [bind.address],
    })

    for (const [sni, subject] of [
      [`www.${ZONE}`, `www.${ZONE}`],
      [`anything.wild.${ZONE}`, `*.wild.${ZONE}`],
    ]) {
      const cert = await eventually(
        () => presentedCertificate(stack.httpsPort, sni!, issuingRoot),
        (c) => !!c && /Pebble/.test(c.issuer),
        60_000,
        300,
      )
      expect(cert).toMatchObject({ subject, issuer: expect.stringMatching(/^Pebble Intermediate CA/), authorized: true })
    }
    // BIND took a signed update adding each challenge record, then one deleting it ...
    for (const name of [`_acme-challenge.www.${ZONE}`, `_acme-challenge.wild.${ZONE}`]) {
      const log = await eventually(
        async () => namedLog(),
        (l) => l.includes(`deleting an RR at ${name} TXT`),
        15_000,
      )
      expect(log).toContain(`/key acme-key: updating zone '${ZONE}/IN': adding an RR at '${name}' TXT`)
      expect(log).toContain(`/key acme-key: updating zone '${ZONE}/IN': deleting an RR at ${name} TXT`)
      // ... and it serves none now.
      expect(await bind.txt(name)).toEqual([])
    }
    const summary = await eventually(
      () => certificateOf(wwwId),
      (c) => !!c?.not_after,
      20_000,
      500,
    )
    expect(summary).toMatchObject({ source: 'acme', issuer: expect.stringMatching(/Pebble/), last_failure: null })
  })

  it("refuses at save a host outside the provider's zone, naming the fix; nothing is created", async () => {
    const before = (await api('/api/hosts')).json.length
    const res = await dnsHost('www.elsewhere.test')
    expect(res.status).toBe(400)
    expect(res.json.error).toBe(
      'domain: www.elsewhere.test is outside the zone example.test that provider_c may update; use another provider or widen its zone under DNS providers',
    )
    expect((await api('/api/hosts')).json.length).toBe(before)
    // Nor may the zone shrink away from a host that uses the provider.
    const narrowed = await putProvider({
      server: bind.address,
      key_name: 'acme-key',
      key_alg: 'hmac-sha256',
      key: '__UNCHANGED__',
      zone: `wild.${ZONE}`,
    })
    expect(narrowed.status).toBe(400)
    expect(narrowed.json.error).toBe(
      `credentials.zone: host ${wwwId} uses provider_c for www.example.test, which is outside wild.example.test; change that host first or give a zone that holds it`,
    )
    const row = (await stack.panel.db().execute("SELECT credentials FROM dns_providers WHERE name = 'provider_c'")).rows[0]!
    expect(JSON.parse(createSecretsBox(TEST_MASTER_KEY).open(String(row.credentials), 'dns_providers/provider_c/credentials')).zone).toBe(
      ZONE,
    )
  })

  it.each([
    [
      "an update the zone's update-policy refuses",
      `denied.${ZONE}`,
      () => pebble.directoryUrl,
      'dns_update_refused',
      /^the DNS server refused the update to zone example\.test \(REFUSED\): the key is not allowed to change this name/,
    ],
    [
      'a CA whose DNS does not serve the record',
      `blind.${ZONE}`,
      () => blind.directoryUrl,
      'dns_txt_not_visible',
      /^the CA could not see the challenge TXT record \(No TXT records? found/,
    ],
  ])('%s: the host and the list show the cause in words, and cert_renewal_failed fires', async (_name, domain, ca, kind, cause) => {
    const host = await dnsHost(domain, ca())
    expect(host.status).toBe(201)
    const failure = (
      await eventually(
        () => certificateOf(host.json.id),
        (c) => !!c?.last_failure,
        60_000,
        500,
      )
    ).last_failure
    expect(failure).toMatchObject({ name: domain, operation: 'obtain', kind, cause: expect.stringMatching(cause) })
    expect(failure.error).not.toMatch(/order=|ca=/)
    // The certificates screen reads the same summary from the host list.
    expect((await api('/api/hosts')).json.find((h: any) => h.id === host.json.id).certificate.last_failure).toEqual(failure)
    const [event] = await eventually(
      async () => eventsFor(domain),
      (e) => e.length > 0,
      15_000,
      200,
    )
    expect(event!.details).toMatchObject({ domain, host_id: host.json.id, operation: 'obtain', kind, cause: failure.cause })
    expect((await api(`/api/hosts/${host.json.id}`, 'DELETE')).status).toBe(204)
  })

  it('a DNS server that does not answer: the cause names it; the provider is set back afterwards', async () => {
    const closed = `127.0.0.1:${await freePort()}`
    expect(
      (await putProvider({ server: closed, key_name: 'acme-key', key_alg: 'hmac-sha256', key: '__UNCHANGED__', zone: ZONE })).status,
    ).toBe(200)
    const host = await dnsHost(`unreach.${ZONE}`)
    expect(host.status).toBe(201)
    const failure = (
      await eventually(
        () => certificateOf(host.json.id),
        (c) => !!c?.last_failure,
        60_000,
        500,
      )
    ).last_failure
    expect(failure).toMatchObject({ kind: 'dns_server_unreachable', cause: expect.stringContaining(closed) })
    expect(failure.cause).toMatch(/could not be reached/)
    expect((await api(`/api/hosts/${host.json.id}`, 'DELETE')).status).toBe(204)
    expect(
      (await putProvider({ server: bind.address, key_name: 'acme-key', key_alg: 'hmac-sha256', key: '__UNCHANGED__', zone: ZONE })).status,
    ).toBe(200)
  })

  it('rotating the TSIG secret (old one removed from BIND): the renewal with the old one fails, explained; with the new one saved it renews, and the proxy was never restarted', async () => {
    const caddyPid = stack.caddy.pid
    const first = await presentedCertificate(stack.httpsPort, `www.${ZONE}`, issuingRoot)
    // A serial is a random number printed without leading zeros: a short one is still a serial.
    expect(first).toMatchObject({ authorized: true, serialNumber: expect.stringMatching(/^[0-9A-F]{8,}$/) })

    await bind.setKeys([KEY_2])
    // BIND now refuses the old secret and takes the new one.
    const probe = `probe.${ZONE}. 60 TXT "rotation"`
    expect(bind.nsupdate(KEY_1, ZONE, [`update add ${probe}`])).toMatchObject({
      code: 2,
      output: expect.stringMatching(/NOTAUTH\(BADSIG\)/),
    })
    expect(bind.nsupdate(KEY_2, ZONE, [`update add ${probe}`]).code).toBe(0)
    expect(bind.nsupdate(KEY_2, ZONE, [`update delete ${probe}`]).code).toBe(0)

    const toggle = async () => {
      for (const enabled of [false, true]) {
        const res = await api(`/api/hosts/${wwwId}/toggle`, 'POST')
        expect([res.status, res.json.enabled, res.json.reconcile.status]).toEqual([200, enabled, 'applied'])
      }
    }
    // The panel still holds the old secret: the renewal's update is refused.
    await toggle()
    const [event] = await eventually(
      async () => eventsFor(`www.${ZONE}`),
      (e) => e.length > 0,
      60_000,
      300,
    )
    expect(event!.details).toMatchObject({
      operation: 'renew',
      kind: 'dns_update_refused',
      cause: expect.stringMatching(/did not accept the TSIG signature/),
    })
    expect((await certificateOf(wwwId)).last_failure).toMatchObject({ name: `www.${ZONE}`, operation: 'renew', kind: 'dns_update_refused' })
    expect((await presentedCertificate(stack.httpsPort, `www.${ZONE}`, issuingRoot))?.serialNumber).toBe(first!.serialNumber)

    // The operator saves the new secret (the other fields kept as they are).
    const put = await putProvider({ server: bind.address, key_name: 'acme-key', key_alg: 'hmac-sha256', key: KEY_2.secret, zone: ZONE })
    expect([put.status, put.json.reconcile.status]).toEqual([200, 'applied'])
    expect((await pushedDnsChallenge(`www.${ZONE}`)).provider.key).toBe(KEY_2.secret)
    await toggle()
    const renewed = await eventually(
      () => presentedCertificate(stack.httpsPort, `www.${ZONE}`, issuingRoot),
      (c) => !!c && c.serialNumber !== first!.serialNumber,
      60_000,
      300,
    )
    expect(renewed).toMatchObject({ subject: `www.${ZONE}`, issuer: expect.stringMatching(/^Pebble Intermediate CA/), authorized: true })
    await eventually(
      () => certificateOf(wwwId),
      (c) => c?.last_failure === null,
      15_000,
      300,
    )
    // The proxy's own line, in the error log the panel's configuration writes (loggers tls.obtain/tls.renew).
    expect(readFileSync(join(stack.logDir, 'error.log'), 'utf8')).toMatch(
      /"logger":"tls\.renew","msg":"certificate renewed successfully","identifier":"www\.example\.test"/,
    )
    expect(stack.caddy.pid).toBe(caddyPid)
    expect(() => process.kill(caddyPid, 0)).not.toThrow()
  }, 120_000)

  it('no TSIG secret in the panel output, any log or audit row, or a notification', async () => {
    const rows = (await stack.panel.db().execute('SELECT message, raw FROM logs')).rows.map((r) => `${r.message} ${r.raw}`).join('\n')
    expect(rows).toContain('dns_provider_update')
    expect(hookBodies.length).toBeGreaterThan(0)
    for (const text of [stack.panel.output(), rows, ...hookBodies])
      for (const s of [KEY_1.secret, KEY_2.secret]) expect(text).not.toContain(s)
  })
})
