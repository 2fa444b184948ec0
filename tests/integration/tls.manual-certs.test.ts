import { X509Certificate } from 'node:crypto'
import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../support/ports'
import { startPebble } from '../support/pebble'
import { startTestUpstream } from '../support/upstream'
import { eventually, presentedCertificate } from '../support/http'
import { createTestPki, type TestPki } from '../support/certs'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { registerTestSecret } from '../support/panel'
import { makeTempDir } from '../support/processes'

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
// PANEL_CERTS_DIR holds only what an earlier version left there (the boot removes its
// certificate files); PROXY_CERTS_DIR names no folder at all: the proxy shares none with the panel.
let legacyCertsDir: string
const certsDir = () => legacyCertsDir
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
  legacyCertsDir = makeTempDir('legacy-certs-')
  writeFileSync(join(legacyCertsDir, 'host-7.key'), 'a key an earlier version wrote')
  writeFileSync(join(legacyCertsDir, 'host-7.crt'), 'its certificate')
  writeFileSync(join(legacyCertsDir, 'notes.txt'), 'not the panel\u2019s')
  stack = await startProxyStack({
    httpPort,
    httpsPort,
    env: {
      PROXY_ACME_TRUSTED_ROOTS: pebble.caPemFile,
      PANEL_CERTS_DIR: legacyCertsDir,
      PROXY_CERTS_DIR: join(legacyCertsDir, 'does-not-exist'),
    },
  })
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

/** The forms a key could take in a text: raw, JSON-escaped, and one line of its base64 body (a partial quote). */
function registerKey(keyPem: string) {
  const line = keyPem.split('\n').find((l) => l.length > 40 && !l.startsWith('-----'))!
  registerTestSecret(keyPem, JSON.stringify(keyPem).slice(1, -1), line)
  return line
}

describe('an uploaded certificate, served by the real Caddy', () => {
  it('the boot removed the files an earlier version wrote for the proxy, and only those', () => {
    expect(filesOnDisk()).toEqual(['notes.txt'])
  })

  it('is presented for its SNI, its key is sealed, download has no key, and DELETE falls back to ACME from Pebble', async () => {
    const leaf = pki.leaf(DOMAIN)
    const keyLine = registerKey(leaf.keyPem)
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
    // No file for the proxy: the certificate and key reached it in the configuration (load_pem).
    expect(filesOnDisk()).toEqual(['notes.txt'])
    expect(existsSync(join(certsDir(), 'does-not-exist'))).toBe(false)

    // What stores or shows the pushed configuration carries the certificate and never the key.
    const revisions = await stack.panel.request('/api/revisions', { cookie: stack.admin })
    const revision = await stack.panel.request(`/api/revisions/${revisions.json[0].id}`, { cookie: stack.admin })
    expect(revision.json.config.apps.tls.certificates.load_pem).toEqual([
      { certificate: leaf.certPem + pki.intermediatePem, key: '[redacted]', tags: [`panel-host-${hostId}`] },
    ])
    expect(revision.json.config.apps.tls.certificates.load_files).toBeUndefined()
    const diff = await stack.panel.request(`/api/revisions/diff?from=${revisions.json[1].id}&to=${revisions.json[0].id}`, {
      cookie: stack.admin,
    })
    expect(diff.status).toBe(200)
    expect(JSON.stringify(diff.json.config_diff)).toContain('[redacted]')
    const dry = await stack.panel.request(`/api/hosts/${hostId}?dry_run=1`, { method: 'DELETE', cookie: stack.admin })
    expect(dry.json).toMatchObject({ dry_run: true, would_push: true })
    // Deleting the host takes its certificate out of the configuration: the diff shows it, key masked.
    const removed = JSON.stringify(dry.json.config_diff)
    expect(removed).toContain('[redacted]')
    expect(removed).toContain(leaf.certPem.split('\n')[1])
    for (const path of ['/api/nodes', '/api/system/health', '/api/logs', '/api/logs?source=caddy_error'])
      expect((await stack.panel.request(path, { cookie: stack.admin })).text).not.toContain(keyLine)

    const del = await stack.panel.request(`/api/manual-certs/${hostId}?revert=auto`, { method: 'DELETE', cookie: stack.admin })
    expect(del.status).toBe(204)
    expect(filesOnDisk()).toEqual(['notes.txt'])
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
