import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { writeMmdb } from './mmdb-writer'
import type { PanelHandle } from './panel'

// The demo of `npm run stack` (scripts/stack.mjs): what it sets and creates, here so
// that tests/browser/forward-auth.test.ts drives the very same settings in Chromium.
//
// ForwardAuth works end to end in a browser on this machine: the panel's public URL
// and the protected demo host share the host name `localhost` (a browser resolves it
// to this machine, and a cookie ignores the port), so the session the login page sets
// is the one the proxy's sub-request carries, and the login page's `rd` (on the
// panel's own domain) brings the visitor back to the page asked for.

export const DEMO_OPEN_HOST = 'demo.localhost'
export const DEMO_PROTECTED_HOST = 'localhost'

/** The panel's domain and public URL in the demo: where ForwardAuth sends a visitor who is not signed in. */
export function demoPanelEnv(panelPort: number): Record<string, string> {
  return { PANEL_DOMAIN: 'localhost', PANEL_PUBLIC_URL: `http://localhost:${panelPort}` }
}

/** A target group on the demo upstream, an open host and a host behind ForwardAuth, both plain HTTP. */
export async function createDemoHosts(panel: PanelHandle, cookie: string, upstreamPort: number) {
  const group = await panel.request('/api/target-groups', {
    method: 'POST',
    cookie,
    body: { name: 'demo', targets: [{ address: `127.0.0.1:${upstreamPort}` }] },
  })
  if (group.status !== 201) throw new Error(`creating the demo target group failed: ${group.status} ${group.text}`)
  const created: Record<string, { id: number; reconcile: string }> = {}
  for (const [domain, authRequired] of [
    [DEMO_OPEN_HOST, false],
    [DEMO_PROTECTED_HOST, true],
  ] as const) {
    const host = await panel.request('/api/hosts', {
      method: 'POST',
      cookie,
      body: { domain, target_group_id: group.json.id, tls_mode: 'none', auth_required: authRequired },
    })
    if (host.status !== 201) throw new Error(`creating the demo host ${domain} failed: ${host.status} ${host.text}`)
    created[domain] = { id: host.json.id, reconcile: host.json.reconcile.status }
  }
  return created
}

// The demo's geolocation databases, served on loopback (serveDemoGeo) so that "Download now" and a
// country ban work without the Internet. Only documentation networks (RFC 5737, RFC 3849): a ban of
// one of these countries never locks out a real address, the operator's own (loopback) included.
export const DEMO_COUNTRIES: Record<string, string[]> = {
  DE: ['192.0.2.0/25', '192.0.2.128/25', '2001:db8:de::/48'],
  FR: ['198.51.100.0/24'],
  NL: ['203.0.113.0/24'],
}
const DEMO_AS: Array<[string, number, string]> = [
  ['192.0.2.0/24', 64496, 'Demo Network DE'],
  ['198.51.100.0/24', 64497, 'Demo Network FR'],
  ['203.0.113.0/24', 64498, 'Demo Network NL'],
]

/** country.mmdb and asn.mmdb as the panel downloads them, written with the tests' fixture writer. */
export function demoGeoDatabases(): { country: Buffer; asn: Buffer } {
  return {
    country: writeMmdb(
      Object.entries(DEMO_COUNTRIES).flatMap(([cc, cidrs]) =>
        cidrs.map((c) => [c, { country_code: cc }] as [string, { country_code: string }]),
      ),
    ),
    asn: writeMmdb(
      DEMO_AS.map(([cidr, n, org]) => [cidr, { autonomous_system_number: n, autonomous_system_organization: org }]),
      'Test-ASN',
    ),
  }
}

export interface DemoGeoServer {
  countryUrl: string
  asnUrl: string
  stop(): Promise<void>
}

/** An HTTP server on 127.0.0.1 answering /country.mmdb and /asn.mmdb (404 otherwise). */
export async function serveDemoGeo(): Promise<DemoGeoServer> {
  const files: Record<string, Buffer> = Object.fromEntries(Object.entries(demoGeoDatabases()).map(([k, v]) => [`/${k}.mmdb`, v]))
  const server = createServer((req, res) => {
    const body = files[req.url ?? '']
    if (body) res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length }).end(body)
    else res.writeHead(404, { 'content-type': 'text/plain' }).end('not here: /country.mmdb and /asn.mmdb only\n')
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    countryUrl: `${base}/country.mmdb`,
    asnUrl: `${base}/asn.mmdb`,
    async stop() {
      server.closeAllConnections() // the panel's fetch may keep its connection alive
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
