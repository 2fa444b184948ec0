import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DNS_PROVIDER_CATALOGUE, delegationTarget, dnsChallengeConfig } from '../../server/utils/hosts/dns-catalogue'
import { DNS_SAMPLES, malformedForms } from '../support/dns-samples'
import { registerTestSecret } from '../support/panel'
import { unusedPort } from '../support/ports'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// One table across every catalogue provider (issue 39): well-formed credentials
// are saved and a DNS-01 host on the provider is pushed to the production Caddy,
// whose module for it provisions (the push is applied) and holds exactly the
// JSON the declaration makes; a malformed value of each field is a 400 naming
// the field, and nothing is stored; no value that is not public appears in any
// answer (checked on every response by the panel's test client), the panel's
// output, the proxy's log, an audit row or a revision. The modules provision
// without a network call and every order stops at a loopback CA where nothing
// listens, so no request leaves the machine.

const PROVIDERS = DNS_PROVIDER_CATALOGUE.map((p) => [p.name, p] as const)
const SECRETS = DNS_PROVIDER_CATALOGUE.flatMap((p) =>
  p.fields.filter((f) => !p.public_fields.includes(f.key)).map((f) => DNS_SAMPLES[p.name]![f.key]!),
)
registerTestSecret(...SECRETS)

let stack: ProxyStack
let groupId: number
let closedCa: string

beforeAll(async () => {
  stack = await startProxyStack()
  groupId = (await createGroup(stack, { name: 'g', targets: [{ address: '127.0.0.1:9' }] })).id
  closedCa = `https://127.0.0.1:${await unusedPort()}/dir` // nothing listens: every order stops here
})
afterAll(async () => {
  await stack?.stop()
})

const put = (name: string, credentials: Record<string, string>) =>
  stack.panel.request(`/api/dns-providers/${name}`, { method: 'PUT', cookie: stack.admin, body: { enabled: true, credentials } })
const sealed = async (name: string) =>
  (await stack.panel.db().execute({ sql: 'SELECT credentials FROM dns_providers WHERE name = ?', args: [name] })).rows[0]?.credentials ??
  null
const domainOf = (name: string) => `${name.replace(/_/g, '-')}.table.example.test`

describe('every provider, well-formed: saved, pushed, provisioned by its module in the production Caddy', () => {
  it.each(PROVIDERS)('%s', async (name, def) => {
    const save = await put(name, DNS_SAMPLES[name]!)
    expect([save.status, save.json.configured, save.json.enabled, save.json.proxy_module]).toEqual([
      200,
      true,
      true,
      `dns.providers.${def.module}`,
    ])
    const host = await createHost(stack, {
      domain: domainOf(name),
      target_group_id: groupId,
      tls_mode: 'auto',
      tls_challenge: 'dns',
      tls_dns_provider: name,
      tls_acme_ca_url: closedCa,
      tls_email: 'ops@example.test',
    })
    // 'applied': the proxy loaded the configuration, so the module provisioned with these values.
    expect([host.status, host.json.reconcile?.status, host.json.reconcile?.error ?? null]).toEqual([201, 'applied', null])
    const policies = ((await stack.caddy.getConfig()) as any).apps.tls.automation.policies
    const policy = policies.find((p: any) => p.subjects.includes(domainOf(name)))
    // Delegated (every provider but acme-dns here): the TXT goes to the host's name in the delegation zone.
    const delegation = DNS_SAMPLES[name]!.challenge_delegation
    expect(policy.issuers[0].challenges.dns).toEqual({
      ...dnsChallengeConfig(def, DNS_SAMPLES[name]!),
      ...(delegation ? { override_domain: delegationTarget(domainOf(name), delegation) } : {}),
    })
    expect(policy.issuers[0].challenges.dns.provider.name).toBe(def.module)
  })
})

describe('every field of every provider, malformed: a 400 naming the field, nothing stored', () => {
  const cases = DNS_PROVIDER_CATALOGUE.flatMap((p) =>
    p.fields.flatMap((f) => malformedForms(DNS_SAMPLES[p.name]![f.key]!).map(([how, bad]) => [p.name, f.key, how, bad] as const)),
  )
  registerTestSecret(
    ...cases.filter(([n, k]) => !DNS_PROVIDER_CATALOGUE.find((p) => p.name === n)!.public_fields.includes(k)).map((c) => c[3]),
  )
  it.each(cases)('%s.%s %s', async (name, key, _how, bad) => {
    const before = await sealed(name)
    const res = await put(name, { ...DNS_SAMPLES[name]!, [key]: bad })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(new RegExp(`^credentials\\.${key}: must be `))
    expect(await sealed(name)).toBe(before)
  })
})

describe('no credential value that is not public anywhere', () => {
  it("not in the panel's output, the proxy's log, an audit row or a revision", async () => {
    const db = stack.panel.db()
    const audit = await db.execute("SELECT message, raw FROM logs WHERE source = 'audit'")
    expect(audit.rows.filter((r) => r.message === 'dns_provider_update').length).toBe(DNS_PROVIDER_CATALOGUE.length)
    const revisions = await db.execute('SELECT desired_state, summary, config FROM config_revisions')
    expect(revisions.rows.length).toBeGreaterThanOrEqual(DNS_PROVIDER_CATALOGUE.length)
    const texts: Array<[string, string]> = [
      ['the panel output', stack.panel.output()],
      ["the proxy's log", readFileSync(stack.caddy.logFile, 'utf8')],
      ['the audit rows', JSON.stringify(audit.rows)],
      ...revisions.rows.map(
        (r, i) =>
          [
            `revision ${i}`,
            [gunzipSync(Buffer.from(r.desired_state as ArrayBuffer)), r.summary, gunzipSync(Buffer.from(r.config as ArrayBuffer))].join(
              '\n',
            ),
          ] as [string, string],
      ),
    ]
    // The revisions hold the pushed DNS challenges, with the values masked.
    expect(texts.at(-1)![1]).toContain('"name":"hetzner"')
    for (const [where, text] of texts)
      for (const s of SECRETS) expect(text.includes(s), `${where} holds a value of a credential`).toBe(false)
  })
})

// After the audit count above (this adds a save). ClouDNS takes its API user's ID or
// its sub-user's (caddy-dns/cloudns sends sub-auth-id when set, else auth-id).
describe('ClouDNS: the API user ID or the sub-user ID', () => {
  it('neither is a 400 naming auth_id, nothing stored; the sub-user alone is saved, pushed and provisioned', async () => {
    const { auth_id: _a, sub_auth_id: _s, ...neither } = DNS_SAMPLES.cloudns!
    const before = await sealed('cloudns')
    const refused = await put('cloudns', neither)
    expect([refused.status, refused.json.error]).toEqual([
      400,
      'credentials.auth_id: is required for cloudns unless credentials.sub_auth_id is given',
    ])
    expect(await sealed('cloudns')).toBe(before)

    const { auth_id: _u, ...subOnly } = DNS_SAMPLES.cloudns!
    const saved = await put('cloudns', subOnly)
    // The table's cloudns host is pushed again with the new credentials: 'applied' means the module provisioned.
    expect([saved.status, saved.json.reconcile?.status, saved.json.reconcile?.error ?? null]).toEqual([200, 'applied', null])
    const policies = ((await stack.caddy.getConfig()) as any).apps.tls.automation.policies
    const policy = policies.find((p: any) => p.subjects.includes(domainOf('cloudns')))
    expect(policy.issuers[0].challenges.dns.provider).toEqual({
      name: 'cloudns',
      sub_auth_id: subOnly.sub_auth_id,
      auth_password: subOnly.auth_password,
    })
  })
})
