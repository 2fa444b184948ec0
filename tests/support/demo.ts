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
