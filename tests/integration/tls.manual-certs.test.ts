import { X509Certificate } from 'node:crypto'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../support/ports'
import { startPebble } from '../support/pebble'
import { startTestUpstream } from '../support/upstream'
import { eventually, presentedCertificate } from '../support/http'
import { createTestPki, type TestPki } from '../support/certs'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

let stack: ProxyStack
let pebble: Awaited<ReturnType<typeof startPebble>>
let up: Awaited<ReturnType<typeof startTestUpstream>>
let pki: TestPki
let hostId: number
const DOMAIN = 'manual.example.test'

async function upload(id: number, parts: Record<string, string>) {
  const form = new FormData()
  for (const [k, v] of Object.entries(parts)) form.append(k, new Blob([v], { type: 'application/x-pem-file' }), `${k}.pem`)
  const res = await stack.panel.request(`/api/manual-certs/${id}`, { method: 'POST', cookie: stack.admin, form })
  return { status: res.status, json: res.json }
}
const certsDir = () => join(stack.panel.dataDir, 'certs')
const filesOnDisk = () => {
  try {
    return readdirSync(certsDir()).sort()
  } catch {
    return []
  }
}

beforeAll(async () => {
  const [httpPort, httpsPort] = [await freePort(), await freePort()]
  up = await startTestUpstream()
  pebble = await startPebble({ httpPort, tlsPort: httpsPort })
  stack = await startProxyStack({ httpPort, httpsPort, env: { PROXY_ACME_TRUSTED_ROOTS: pebble.caPemFile } })
  pki = createTestPki()
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const host = await createHost(stack, {
    domain: DOMAIN,
    target_group_id: group.id,
    tls_mode: 'auto',
    tls_challenge: 'http',
    tls_acme_ca_url: pebble.directoryUrl,
  })
  hostId = host.json.id
})
afterAll(async () => {
  await stack?.stop()
  await pebble?.stop()
  await up?.stop()
})

describe('rejected uploads: 400 with the reason, nothing written', () => {
  it.each([
    ['garbage PEM', () => ({ cert_pem: 'not a certificate', key_pem: 'nope' }), /cert_pem: is not a PEM certificate/],
    ['a mismatched key', () => ({ cert_pem: pki.leaf(DOMAIN).certPem, key_pem: pki.leaf(DOMAIN).keyPem }), /does not match/],
    ['an expired certificate', () => pemParts(pki.leaf(DOMAIN, { expired: true })), /expired/],
    ['the wrong domain', () => pemParts(pki.leaf('other.example.test')), /does not cover manual.example.test/],
    ['a chain that does not verify', () => ({ ...pemParts(pki.leaf(DOMAIN)), chain_pem: pki.rootPem }), /chain_pem/],
    ['an oversized part', () => ({ ...pemParts(pki.leaf(DOMAIN)), chain_pem: 'x'.repeat(300 * 1024) }), /chain_pem: larger than 256 KiB/],
    ['an unknown part', () => ({ ...pemParts(pki.leaf(DOMAIN)), password: 'x' }), /unknown part "password"/],
  ])('%s', async (_name, parts, reason) => {
    const before = filesOnDisk()
    const res = await upload(hostId, parts())
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(reason)
    expect(filesOnDisk()).toEqual(before)
    expect((await stack.panel.db().execute('SELECT count(*) AS n FROM manual_certs')).rows[0]!.n).toBe(0)
  })

  it('a host that does not exist: 404', async () => {
    expect((await upload(9999, pemParts(pki.leaf(DOMAIN)))).status).toBe(404)
  })
})

function pemParts(p: { certPem: string; keyPem: string }) {
  return { cert_pem: p.certPem, key_pem: p.keyPem }
}

describe('an uploaded certificate, served by the real Caddy', () => {
  it('is presented for its SNI, its key is sealed, download has no key, and DELETE falls back to ACME from Pebble', async () => {
    const leaf = pki.leaf(DOMAIN)
    const res = await upload(hostId, { cert_pem: leaf.certPem, key_pem: leaf.keyPem, chain_pem: pki.intermediatePem })
    expect(res.status).toBe(201)
    const fingerprint = new X509Certificate(leaf.certPem).fingerprint256.replace(/:/g, '').toLowerCase()
    expect(res.json).toMatchObject({
      host_id: hostId,
      domain: DOMAIN,
      subject: DOMAIN,
      issuer: 'Panel Test Intermediate',
      sans: [DOMAIN],
      has_chain: true,
      fingerprint_sha256: fingerprint,
    })
    expect(JSON.stringify(res.json)).not.toContain('PRIVATE KEY')

    // The handshake presents exactly the uploaded certificate, trusted through our own root.
    const seen = await eventually(
      () => presentedCertificate(stack.httpsPort, DOMAIN, pki.rootPem),
      (c) => c?.subject === DOMAIN && c.issuer === 'Panel Test Intermediate',
      10_000,
    )
    expect(seen).toMatchObject({ subject: DOMAIN, issuer: 'Panel Test Intermediate', authorized: true })

    const host = await stack.panel.request(`/api/hosts/${hostId}`, { cookie: stack.admin })
    expect(host.json.tls_mode).toBe('manual')
    expect(host.json.certificate).toMatchObject({ source: 'manual', issuer: 'Panel Test Intermediate' })
    expect(Date.parse(host.json.certificate.not_after)).toBeGreaterThan(Date.now())
    expect((await stack.panel.request(`/api/manual-certs/${hostId}`, { cookie: stack.admin })).json.fingerprint_sha256).toBe(fingerprint)
    expect((await stack.panel.request('/api/manual-certs', { cookie: stack.admin })).json).toHaveLength(1)

    const download = await fetch(`${stack.panel.url}/api/manual-certs/${hostId}/download`, { headers: { cookie: stack.admin } })
    const pem = await download.text()
    expect(download.status).toBe(200)
    expect(pem).toContain(leaf.certPem.trim())
    expect(pem).toContain(pki.intermediatePem.trim())
    expect(pem).not.toContain('PRIVATE KEY')

    const row = await stack.panel.db().execute('SELECT key_sealed, cert_pem FROM manual_certs')
    expect(String(row.rows[0]!.key_sealed)).toMatch(/^v1\./)
    expect(String(row.rows[0]!.key_sealed)).not.toContain('PRIVATE')
    expect(statSync(join(certsDir(), `host-${hostId}.key`)).mode & 0o777).toBe(0o600)

    const del = await stack.panel.request(`/api/manual-certs/${hostId}?revert=auto`, { method: 'DELETE', cookie: stack.admin })
    expect(del.status).toBe(204)
    expect(filesOnDisk()).toEqual([])
    expect((await stack.panel.request(`/api/manual-certs/${hostId}`, { cookie: stack.admin })).status).toBe(404)
    expect((await stack.panel.request(`/api/hosts/${hostId}`, { cookie: stack.admin })).json.tls_mode).toBe('auto')
    const issued = await eventually(
      () => presentedCertificate(stack.httpsPort, DOMAIN, ''),
      (c) => /Pebble/.test(c?.issuer ?? ''),
      30_000,
      300,
    )
    expect(issued?.issuer).toMatch(/Pebble/)
    const acme = await eventually(
      () => stack.panel.request(`/api/hosts/${hostId}`, { cookie: stack.admin }),
      (r) => !!r.json.certificate?.not_after,
      15_000,
      500,
    )
    expect(acme.json.certificate).toMatchObject({ source: 'acme', issuer: expect.stringMatching(/Pebble/) })
  })

  it('DELETE ?revert=none serves plain HTTP; a bad revert value is 400', async () => {
    const leaf = pki.leaf(DOMAIN)
    expect((await upload(hostId, pemParts(leaf))).status).toBe(201)
    expect((await stack.panel.request(`/api/manual-certs/${hostId}?revert=maybe`, { method: 'DELETE', cookie: stack.admin })).status).toBe(
      400,
    )
    expect((await stack.panel.request(`/api/manual-certs/${hostId}?revert=none`, { method: 'DELETE', cookie: stack.admin })).status).toBe(
      204,
    )
    const host = await stack.panel.request(`/api/hosts/${hostId}`, { cookie: stack.admin })
    expect(host.json).toMatchObject({ tls_mode: 'none', certificate: null })
  })
})
