import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateTsigKey, startBind, type BindHandle } from '../support/bind'
import { registerTestSecret } from '../support/panel'
import { startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { sessionApi } from '../support/api-client'

// The DNS credentials check for real: the panel asks node 1's production Caddy
// (its dnscheck admin module) to write a TXT record through caddy-dns/rfc2136 into
// a zone BIND 9 serves, look for it at BIND and remove it. A wrong TSIG secret is
// reported in words, and no secret appears in an answer, the panel's output (the
// harness scans both), an audit row or the proxy's log.

const ZONE = 'example.test'
const LOCKED = 'locked.test'
// The zone of the hosts when the challenge is delegated: its _acme-challenge names are CNAMEs into ZONE.
const HOSTS = 'hosts.test'
const KEY = generateTsigKey('acme-key')
const WRONG = generateTsigKey('acme-key') // same name, a secret BIND does not know
// Malformed for caddy-dns/cloudflare, whose provision error quotes the token it refuses.
const BAD_CLOUDFLARE_TOKEN = 'not-a-cloudflare-token SECRET-7f3a9c'
registerTestSecret(KEY.secret, WRONG.secret, BAD_CLOUDFLARE_TOKEN)

let bind: BindHandle
let stack: ProxyStack
const api = sessionApi(() => ({ panel: stack.panel, cookie: stack.admin }))
const putProvider = (key: string, enabled = true) =>
  api('/api/dns-providers/provider_c', 'PUT', {
    enabled,
    credentials: { server: bind.address, key_name: KEY.name, key_alg: KEY.algorithm, key, zone: ZONE },
  })
const namedLog = () => readFileSync(bind.logFile, 'utf8')
const auditRows = async () =>
  (
    await stack.panel.db().execute("SELECT message, raw FROM logs WHERE source = 'audit' AND message = 'dns_provider_test' ORDER BY id")
  ).rows.map((r) => JSON.parse(String(r.raw)))

/** POST to the proxy's admin API with node:http (no Sec-Fetch-Mode, which Caddy 2.11 would refuse without an Origin). */
function proxyDnsCheck(body: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${stack.caddy.adminUrl}/panel/dns-check`,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = ''
        res.on('data', (c) => {
          text += c
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }))
      },
    )
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
}

beforeAll(async () => {
  bind = await startBind({
    zones: [
      { name: ZONE, policy: ['grant acme-key zonesub TXT'] },
      { name: LOCKED, policy: [`grant acme-key name nothing.${LOCKED}. TXT`] },
      { name: HOSTS, policy: ['grant acme-key zonesub CNAME'] },
    ],
    keys: [KEY],
  })
  stack = await startProxyStack()
})
afterAll(async () => {
  await stack?.stop()
  await bind?.stop()
})

describe('POST /api/dns-providers/{name}/test through the production Caddy and BIND', () => {
  it('writes, sees and removes the TXT record, and keeps the result as last_check', async () => {
    // Disabled: credentials are proved before any host depends on them.
    expect((await putProvider(KEY.secret, false)).status).toBe(200)
    const before = namedLog()
    const res = await api('/api/dns-providers/provider_c/test', 'POST', { zone: ZONE })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ zone: ZONE, record: `_panel-check.${ZONE}`, ok: true })
    expect(res.json.steps.map((s: any) => [s.step, s.ok])).toEqual([
      ['authenticate', true],
      ['write', true],
      ['visible', true],
      ['remove', true],
    ])
    expect(res.json.steps[2].detail).toContain(`visible at ${bind.address}`)
    // BIND took the update adding the record and the one deleting it, signed with the key.
    const updates = namedLog().slice(before.length)
    expect(updates).toMatch(new RegExp(`adding an RR at '_panel-check\\.${ZONE}' TXT`))
    expect(updates).toMatch(new RegExp(`deleting an RR at _panel-check\\.${ZONE} TXT`))
    expect(await bind.txt(`_panel-check.${ZONE}`)).toEqual([])

    const got = await api('/api/dns-providers/provider_c')
    expect(got.json.last_check).toEqual(res.json)
    const listed = (await api('/api/dns-providers')).json.find((p: any) => p.name === 'provider_c')
    expect(listed.last_check).toEqual(res.json)
    expect((await auditRows()).at(-1)).toMatchObject({ name: 'provider_c', zone: ZONE, ok: true, failed_step: null })
  })

  it('reports a wrong TSIG secret as refused authentication, without the secret anywhere', async () => {
    expect((await putProvider(WRONG.secret)).status).toBe(200)
    // New credentials: the last check said nothing about them.
    expect((await api('/api/dns-providers/provider_c')).json.last_check).toBeNull()
    const res = await api('/api/dns-providers/provider_c/test', 'POST', { zone: ZONE })
    expect(res.status).toBe(200)
    expect(res.json.ok).toBe(false)
    expect(res.json.steps).toEqual([{ step: 'authenticate', ok: false, detail: expect.stringMatching(/^authentication refused: rfc2136/) }])
    expect(await bind.txt(`_panel-check.${ZONE}`)).toEqual([])
    const audit = await auditRows()
    expect(audit.at(-1)).toMatchObject({ name: 'provider_c', zone: ZONE, ok: false, failed_step: 'authenticate' })
    const everywhere = [JSON.stringify(audit), readFileSync(stack.caddy.logFile, 'utf8'), res.text, stack.panel.output()].join('\n')
    for (const secret of [KEY.secret, WRONG.secret]) expect(everywhere).not.toContain(secret)
  })

  it('tells a refused write from a zone the server does not serve', async () => {
    // No zone limit in the panel, so the server's own answers are what the check reports.
    const put = await api('/api/dns-providers/provider_c', 'PUT', {
      enabled: true,
      credentials: { server: bind.address, key_name: KEY.name, key_alg: KEY.algorithm, key: KEY.secret },
    })
    expect(put.status).toBe(200)
    // BIND serves locked.test but its policy gives acme-key nothing there: REFUSED.
    const locked = await api('/api/dns-providers/provider_c/test', 'POST', { zone: LOCKED })
    expect(locked.json.steps.map((s: any) => [s.step, s.ok])).toEqual([
      ['authenticate', true],
      ['write', false],
    ])
    expect(locked.json.steps[1].detail).toMatch(
      /^write refused: rfc2136 did not let these credentials add the TXT record _panel-check\.locked\.test\. /,
    )
    expect(locked.json.steps[1].detail).toContain('REFUSED')
    // A zone BIND does not serve: NOTAUTH, which a DNS server also answers to a wrong key; the words say both.
    const unserved = await api('/api/dns-providers/provider_c/test', 'POST', { zone: 'unserved.test' })
    expect(unserved.json.steps).toEqual([
      {
        step: 'authenticate',
        ok: false,
        detail: expect.stringContaining('or it is not the primary server of the zone unserved.test.'),
      },
    ])
  })

  it('refuses a zone that is malformed or outside the provider, changing nothing', async () => {
    expect((await putProvider(KEY.secret)).status).toBe(200)
    const before = (await auditRows()).length
    const bad = await api('/api/dns-providers/provider_c/test', 'POST', { zone: 'not a zone' })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatch(/^zone: must be a DNS zone name/)
    const outside = await api('/api/dns-providers/provider_c/test', 'POST', { zone: 'example.org' })
    expect(outside.status).toBe(400)
    expect(outside.json.error).toBe(`zone: example.org is outside the zone ${ZONE} that provider_c may update; test a zone inside it`)
    const unset = await api('/api/dns-providers/provider_b/test', 'POST', { zone: ZONE })
    expect(unset.status).toBe(400)
    expect(unset.json.error).toMatch(/^credentials: provider_b has none stored/)
    expect((await api('/api/dns-providers/nope/test', 'POST', { zone: ZONE })).status).toBe(404)
    expect((await auditRows()).length).toBe(before)
  })

  it('the proxy module redacts what a provider module quotes when it refuses the credentials', async () => {
    const res = await proxyDnsCheck({
      provider: { name: 'cloudflare', api_token: BAD_CLOUDFLARE_TOKEN },
      zone: `${ZONE}.`,
      resolvers: [bind.address],
    })
    expect(res.status).toBe(200)
    const answer = JSON.parse(res.text)
    expect(answer).toEqual({
      ok: false,
      steps: [
        {
          step: 'authenticate',
          ok: false,
          detail: expect.stringMatching(/^the proxy's cloudflare module refused the credentials: .*\[redacted\]/),
        },
      ],
    })
    expect(res.text).not.toContain('SECRET-7f3a9c')
    expect(readFileSync(stack.caddy.logFile, 'utf8')).not.toContain('SECRET-7f3a9c')
  })

  it('the proxy module checks a challenge delegation: the CNAME from the host zone into the zone the provider writes', async () => {
    const from = `_acme-challenge.www.${HOSTS}.`
    const target = `_panel-check.${ZONE}.`
    const provider = { name: 'rfc2136', server: bind.address, key_name: KEY.name, key_alg: KEY.algorithm, key: KEY.secret }
    const ask = async () =>
      JSON.parse(
        (
          await proxyDnsCheck({
            provider,
            zone: `${ZONE}.`,
            resolvers: [bind.address],
            delegated_from: from,
            public_fields: ['server', 'key_name', 'key_alg'],
          })
        ).text,
      )
    // Not delegated yet: the words name the record to create; the written record is still removed.
    const missing = await ask()
    expect(missing.steps.map((s: any) => [s.step, s.ok])).toEqual([
      ['authenticate', true],
      ['write', true],
      ['visible', true],
      ['delegation', false],
      ['remove', true],
    ])
    expect(missing.steps[3].detail).toBe(
      `delegation not in place: ${bind.address}: no CNAME at ${from} (the name does not exist); create the record ${from} CNAME ${target} in the zone that holds www.${HOSTS}.`,
    )
    expect(bind.nsupdate(KEY, HOSTS, [`update add ${from} 60 CNAME ${target}`]).code).toBe(0)
    const delegated = await ask()
    expect(delegated.ok).toBe(true)
    expect(delegated.steps[3]).toEqual({ step: 'delegation', ok: true, detail: `${from} is a CNAME to ${target} at ${bind.address}` })
    expect(await bind.txt(target.slice(0, -1))).toEqual([])
    expect(JSON.stringify([missing, delegated]) + readFileSync(stack.caddy.logFile, 'utf8')).not.toContain(KEY.secret)
  })
})
