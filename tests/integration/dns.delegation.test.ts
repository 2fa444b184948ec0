import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sessionApi } from '../support/api-client'
import { generateTsigKey, startBind, type BindHandle } from '../support/bind'
import { eventually, presentedCertificate } from '../support/http'
import { registerTestSecret } from '../support/panel'
import { startPebble, type PebbleHandle } from '../support/pebble'
import { freePort } from '../support/ports'
import { makeTempDir } from '../support/processes'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream } from '../support/upstream'

// Challenge delegation (issue 39 item 2) with the real BIND, Pebble and the
// production Caddy: the hosts' zone (hosts.test) is not one the provider may
// write; provider_c writes example.test only, and is given example.test as its
// delegation zone. The host *.hosts.test then needs the CNAME
// _acme-challenge.hosts.test → hosts.test.example.test: the panel shows it and
// looks it up (missing, then in place once created), and Pebble issues the
// wildcard through it, the TXT record written into example.test.

const ZONE = 'example.test'
const HOSTS = 'hosts.test'
const KEY = generateTsigKey('acme-key')
registerTestSecret(KEY.secret)

let bind: BindHandle
let pebble: PebbleHandle
let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let issuingRoot: string
let groupId: number
const api = sessionApi(() => ({ panel: stack.panel, cookie: stack.admin }))
const credentials = (extra: Record<string, string> = {}) => ({
  server: bind.address,
  key_name: KEY.name,
  key_alg: KEY.algorithm,
  key: KEY.secret,
  zone: ZONE,
  ...extra,
})

beforeAll(async () => {
  bind = await startBind({
    zones: [
      { name: ZONE, policy: ['grant acme-key zonesub TXT'] },
      // The hosts' zone: the test creates the CNAME there as its operator would; the provider only writes TXT in ZONE.
      { name: HOSTS, policy: [`grant acme-key name _acme-challenge.${HOSTS}. CNAME`] },
    ],
    keys: [KEY],
    // Pebble asks BIND as its resolver: it must follow the CNAME into ZONE, as a CA's resolver does.
    recursive: true,
  })
  const httpPort = await freePort()
  const httpsPort = await freePort()
  up = await startTestUpstream()
  pebble = await startPebble({ httpPort, tlsPort: httpsPort, dnsServer: bind.address, env: { PEBBLE_AUTHZREUSE: '0' } })
  issuingRoot = await pebble.issuingRootPem()
  const roots = join(makeTempDir('acme-roots-'), 'roots.pem')
  writeFileSync(roots, pebble.caPem)
  stack = await startProxyStack({ httpPort, httpsPort, env: { PROXY_ACME_TRUSTED_ROOTS: roots } })
  groupId = (await createGroup(stack, { name: 'web', targets: [{ address: `127.0.0.1:${up.port}` }] })).id
})
afterAll(async () => {
  await stack?.stop()
  await pebble?.stop()
  await bind?.stop()
  await up?.stop()
})

const dnsHost = (domain: string, aliases: string[], ca: string) =>
  createHost(stack, {
    domain,
    aliases,
    target_group_id: groupId,
    tls_mode: 'auto',
    tls_challenge: 'dns',
    tls_dns_provider: 'provider_c',
    tls_acme_ca_url: ca,
    tls_email: 'ops@example.test',
  })

describe('DNS-01 delegated into a zone the provider writes (BIND, Pebble, the production Caddy)', () => {
  it("a host outside the provider's zone is refused until the provider delegates; a delegation zone outside its zone is refused", async () => {
    expect((await api('/api/dns-providers/provider_c', 'PUT', { enabled: true, credentials: credentials() })).status).toBe(200)
    const outside = await dnsHost(`*.${HOSTS}`, [HOSTS], pebble.directoryUrl)
    expect([outside.status, outside.json.error]).toEqual([
      400,
      `domain: *.${HOSTS} is outside the zone ${ZONE} that provider_c may update; use another provider or widen its zone under DNS providers`,
    ])
    const wrong = await api('/api/dns-providers/provider_c', 'PUT', {
      enabled: true,
      credentials: credentials({ challenge_delegation: 'acme.other.test' }),
    })
    expect([wrong.status, wrong.json.error]).toEqual([
      400,
      `credentials.challenge_delegation: must lie inside the zone ${ZONE} that provider_c may update`,
    ])
    expect((await api('/api/dns-providers/provider_c')).json.challenge_delegation).toBeNull()
    const ok = await api('/api/dns-providers/provider_c', 'PUT', {
      enabled: true,
      credentials: credentials({ challenge_delegation: ZONE }),
    })
    expect(ok.status).toBe(200)
    // Not a secret: the answers carry the delegation zone, so a form can show it and a save keep it.
    expect(ok.json.challenge_delegation).toBe(ZONE)
    expect((await api('/api/dns-providers/provider_c')).json.challenge_delegation).toBe(ZONE)
    const listed = (await api('/api/dns-providers')).json
    expect(listed.find((p: any) => p.name === 'provider_c').challenge_delegation).toBe(ZONE)
    expect(listed.find((p: any) => p.name === 'acmedns').challenge_delegation).toBeNull()
    expect(JSON.stringify(listed)).not.toContain(KEY.secret)
  })

  it('"Test" with a host name proves the delegation: the TXT at the delegated name and the CNAME to it, against BIND', async () => {
    const target = `${HOSTS}.${ZONE}`
    const from = `_acme-challenge.${HOSTS}.`
    const test = (body: Record<string, string>) => api('/api/dns-providers/provider_c/test', 'POST', body)
    // No CNAME yet: the check writes where an order would write, and says which record to create.
    const missing = await test({ zone: ZONE, host: `*.${HOSTS}` })
    expect(missing.status).toBe(200)
    expect(missing.json).toMatchObject({ zone: ZONE, host: HOSTS, record: target, ok: false })
    expect(missing.json.steps.map((s: any) => [s.step, s.ok])).toEqual([
      ['authenticate', true],
      ['write', true],
      ['visible', true],
      ['delegation', false],
      ['remove', true],
    ])
    expect(missing.json.steps[3].detail).toContain(`create the record ${from} CNAME ${target}.`)
    expect(readFileSync(bind.logFile, 'utf8')).toContain(`updating zone '${ZONE}/IN': adding an RR at '${target}' TXT`)
    expect(await bind.txt(target)).toEqual([])

    expect(bind.nsupdate(KEY, HOSTS, [`update add ${from} 60 CNAME ${target}.`]).code).toBe(0)
    const inPlace = await test({ zone: ZONE, host: HOSTS })
    expect(inPlace.json).toMatchObject({ host: HOSTS, record: target, ok: true })
    expect(inPlace.json.steps[3]).toEqual({ step: 'delegation', ok: true, detail: `${from} is a CNAME to ${target}. at ${bind.address}` })
    expect((await api('/api/dns-providers/provider_c')).json.last_check).toEqual(inPlace.json)
    const audit = (
      await stack.panel.db().execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'dns_provider_test' ORDER BY id")
    ).rows.map((r) => JSON.parse(String(r.raw)))
    expect(audit.at(-1)).toMatchObject({ name: 'provider_c', zone: ZONE, host: HOSTS, ok: true, failed_step: null })
    expect(JSON.stringify([missing.json, inPlace.json, audit])).not.toContain(KEY.secret)

    // Bad input is a 400 naming the field, and nothing is asked of the proxy.
    const bad = await test({ zone: ZONE, host: 'not a host' })
    expect([bad.status, bad.json.error]).toEqual([400, expect.stringMatching(/^host: must be a host name/)])
    const outside = await test({ zone: HOSTS, host: HOSTS })
    expect(outside.status).toBe(400)
    expect(audit.length).toBe(
      (await stack.panel.db().execute("SELECT count(*) AS n FROM logs WHERE source = 'audit' AND message = 'dns_provider_test'")).rows[0]!
        .n,
    )
  })

  it('a host whose CNAME is not there yet: the panel shows the record to create and says it is missing', async () => {
    // Its orders go to a CA where nothing listens: this host only shows the check.
    const created = await dnsHost(`missing.${HOSTS}`, [], `https://127.0.0.1:${await freePort()}/dir`)
    expect([created.status, created.json.reconcile.status]).toEqual([201, 'applied'])
    const missing = await api(`/api/hosts/${created.json.id}/dns-delegation`)
    expect(missing.status).toBe(200)
    expect(missing.json).toEqual({
      host_id: created.json.id,
      provider: 'provider_c',
      zone: ZONE,
      asked: [bind.address],
      ok: false,
      records: [
        {
          name: `_acme-challenge.missing.${HOSTS}`,
          type: 'CNAME',
          value: `missing.${HOSTS}.${ZONE}`,
          resolves: false,
          found: [],
          detail: `_acme-challenge.missing.${HOSTS} has no CNAME yet`,
        },
      ],
    })
    // A host that does not delegate is told so.
    const plain = await createHost(stack, { domain: 'plain.example.test', target_group_id: groupId })
    const refused = await api(`/api/hosts/${plain.json.id}/dns-delegation`)
    expect([refused.status, refused.json.error]).toEqual([
      400,
      `host ${plain.json.id} does not delegate its DNS challenge: give it DNS-01 with a provider that has a delegation zone (challenge_delegation under DNS providers)`,
    ])
  })

  it("with the CNAME created in the hosts' zone: the check says it is in place and Pebble issues the wildcard through it", async () => {
    const target = `${HOSTS}.${ZONE}`
    expect(bind.nsupdate(KEY, HOSTS, [`update add _acme-challenge.${HOSTS}. 60 CNAME ${target}.`]).code).toBe(0)
    const created = await dnsHost(`*.${HOSTS}`, [HOSTS], pebble.directoryUrl)
    expect([created.status, created.json.reconcile.status]).toEqual([201, 'applied'])
    const config = (await stack.caddy.getConfig()) as any
    const policy = config.apps.tls.automation.policies.find((p: any) => p.subjects.includes(`*.${HOSTS}`))
    expect(policy.issuers[0].challenges.dns).toEqual({
      provider: { name: 'rfc2136', server: bind.address, key_name: KEY.name, key_alg: KEY.algorithm, key: KEY.secret },
      resolvers: [bind.address],
      override_domain: target,
    })
    const inPlace = await api(`/api/hosts/${created.json.id}/dns-delegation`)
    expect(inPlace.json).toMatchObject({
      ok: true,
      records: [
        { name: `_acme-challenge.${HOSTS}`, resolves: true, found: [target], detail: `_acme-challenge.${HOSTS} is a CNAME to ${target}` },
      ],
    })

    const cert = await eventually(
      () => presentedCertificate(stack.httpsPort, `anything.${HOSTS}`, issuingRoot),
      (c) => !!c && /Pebble/.test(c.issuer),
      60_000,
      300,
    )
    expect(cert).toMatchObject({ subject: `*.${HOSTS}`, issuer: expect.stringMatching(/^Pebble Intermediate CA/), authorized: true })
    // Both names (the wildcard and the apex) answer at the same _acme-challenge label, so two TXT values land at the
    // target and each is removed by its own clean-up; the zone is clean once the last of them is gone.
    expect(
      await eventually(
        () => bind.txt(target),
        (values) => values.length === 0,
        15_000,
      ),
    ).toEqual([])
    const log = readFileSync(bind.logFile, 'utf8')
    expect(log).toContain(`/key acme-key: updating zone '${ZONE}/IN': adding an RR at '${target}' TXT`)
    expect(log).toContain(`deleting an RR at ${target} TXT`)
    // Nothing but the operator's CNAME was written into the hosts' zone.
    expect(log).not.toContain(`updating zone '${HOSTS}/IN': adding an RR at '_acme-challenge.${HOSTS}' TXT`)
  }, 90_000)
})
