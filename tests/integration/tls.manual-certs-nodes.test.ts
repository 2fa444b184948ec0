import { X509Certificate } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startCaddy, type CaddyHandle } from '../support/caddy'
import { createTestPki, type TestPki } from '../support/certs'
import { eventually, presentedCertificate } from '../support/http'
import { registerTestSecret } from '../support/panel'
import { freePort } from '../support/ports'
import { makeTempDir } from '../support/processes'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream } from '../support/upstream'

// An uploaded certificate reaches a second proxy node with the configuration
// (load_pem, docs/tls.md): the panel's certificates folder is empty and the
// proxy's (PROXY_CERTS_DIR) names no folder at all. Both production Caddy
// nodes share the HTTPS port (SO_REUSEPORT); what node 2 presents is read while
// node 1 is stopped.

const DOMAIN = 'uploaded.example.test'
let stack: ProxyStack
let second: CaddyHandle
let up: Awaited<ReturnType<typeof startTestUpstream>>
let pki: TestPki
let panelCertsDir: string

async function nodes() {
  const res = await stack.panel.request('/api/nodes', { cookie: stack.admin })
  expect(res.status).toBe(200)
  return res.json as Array<Record<string, any>>
}

beforeAll(async () => {
  up = await startTestUpstream()
  pki = createTestPki()
  panelCertsDir = makeTempDir('panel-certs-')
  stack = await startProxyStack({
    httpPort: await freePort(),
    httpsPort: await freePort(),
    env: { PANEL_CERTS_DIR: panelCertsDir, PROXY_CERTS_DIR: join(panelCertsDir, 'no-such-folder') },
  })
  second = await startCaddy()
  const res = await stack.panel.request('/api/nodes', {
    method: 'POST',
    cookie: stack.admin,
    body: { name: 'node-2', admin_url: second.adminUrl },
  })
  expect(res.status).toBe(201)
  await eventually(nodes, (l) => l.length === 2 && l.every((n) => n.status.in_sync === true), 20_000)
}, 90_000)

afterAll(async () => {
  await stack?.stop()
  await second?.stop()
  await up?.stop()
})

describe('an uploaded certificate on two nodes without a shared certificates folder', () => {
  it('reaches node 2 in the configuration, which presents it alone, and no file is written', async () => {
    const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
    // Plain HTTP first (no ACME attempt anywhere); the upload turns it to manual.
    const host = await createHost(stack, { domain: DOMAIN, target_group_id: group.id, tls_mode: 'none' })
    expect(host.status).toBe(201)
    const leaf = pki.leaf(DOMAIN)
    registerTestSecret(leaf.keyPem, JSON.stringify(leaf.keyPem).slice(1, -1))
    const form = new FormData()
    for (const [k, v] of Object.entries({ cert_pem: leaf.certPem, key_pem: leaf.keyPem, chain_pem: pki.intermediatePem }))
      form.append(k, new Blob([v], { type: 'application/x-pem-file' }), `${k}.pem`)
    const upload = await stack.panel.request(`/api/manual-certs/${host.json.id}`, { method: 'POST', cookie: stack.admin, form })
    expect(upload.status).toBe(201)
    // Every node took it (a node that did not would be named in a warning).
    expect((upload.json.reconcile.warnings ?? []).filter((w: string) => /^node /.test(w))).toEqual([])

    // Both nodes hold it in the configuration (node 2's own admin API shows it: it came with the push).
    for (const caddy of [stack.caddy, second]) {
      const config = (await caddy.getConfig()) as any
      expect(config.apps.tls.certificates.load_pem).toEqual([
        { certificate: leaf.certPem + pki.intermediatePem, key: leaf.keyPem, tags: [`panel-host-${host.json.id}`] },
      ])
      expect(config.apps.tls.certificates.load_files).toBeUndefined()
    }
    await eventually(nodes, (l) => l.every((n) => n.status.in_sync === true), 20_000)
    expect(readdirSync(panelCertsDir)).toEqual([])
    expect(existsSync(join(panelCertsDir, 'no-such-folder'))).toBe(false)

    // Node 1 stopped: what answers on the shared port is node 2.
    await stack.caddy.stop()
    expect(
      await stack.caddy.getConfig().then(
        () => true,
        () => false,
      ),
    ).toBe(false)
    const fingerprint = new X509Certificate(leaf.certPem).fingerprint256
    const seen = await eventually(
      () => presentedCertificate(stack.httpsPort, DOMAIN, pki.rootPem),
      (c) => c?.fingerprint256 === fingerprint,
      10_000,
    )
    expect(seen).toMatchObject({ subject: DOMAIN, issuer: 'Panel Test Intermediate', authorized: true, fingerprint256: fingerprint })
  })
})
