import { panelEnvFor, startCrowdsec, type CrowdsecHandle } from './crowdsec'
import { createPublicClientNamespace, type PublicClientNamespace } from './netns'
import { registerTestSecret } from './panel'
import { makeTempDir } from './processes'
import { startProxyStack, type ProxyStack } from './proxy-stack'
import { startTestUpstream, type TestUpstream } from './upstream'

// The real edge as the end-to-end tests use it: public-looking clients in a
// network namespace, the production Caddy driven by the panel, the whole engine
// reading the logs the panel's configuration writes, and a test upstream.

export const EDGE_HOST_ADDRESS = '198.51.100.1'

export interface EdgeStack {
  cs: CrowdsecHandle
  stack: ProxyStack
  ns: PublicClientNamespace
  up: TestUpstream
  /** One request from `from` (a namespace address) to the virtual host `host`, through the proxy. */
  get(from: string, host: string, path?: string, curlArgs?: string[]): ReturnType<PublicClientNamespace['curl']>
  stop(): Promise<void>
}

export async function startEdgeStack(opts: {
  clientAddresses: string[]
  env?: Record<string, string>
  dataDir?: string
  tickerSeconds?: number
}): Promise<EdgeStack> {
  const up = await startTestUpstream()
  const ns = await createPublicClientNamespace({ hostAddress: EDGE_HOST_ADDRESS, clientAddresses: opts.clientAddresses })
  const logDir = makeTempDir('edge-logs-')
  const cs = await startCrowdsec({ logDir })
  registerTestSecret(cs.machinePassword, cs.bouncerKey)
  const stack = await startProxyStack({
    logDir,
    dataDir: opts.dataDir,
    env: { ...panelEnvFor(cs), ...opts.env },
    httpListenExtra: [EDGE_HOST_ADDRESS],
  })
  if (opts.tickerSeconds) {
    const res = await stack.panel.request('/api/settings', {
      method: 'PUT',
      cookie: stack.admin,
      body: { 'security_engine.ticker_interval': `${opts.tickerSeconds}s` },
    })
    if (res.status !== 200) throw new Error(`setting the bouncer's poll failed: ${res.status} ${res.text}`)
  }
  return {
    cs,
    stack,
    ns,
    up,
    get: (from, host, path = '/', curlArgs = []) =>
      ns.curl(`http://${EDGE_HOST_ADDRESS}:${stack.httpPort}${path}`, ['-H', `Host: ${host}`, ...curlArgs], { fromAddress: from }),
    async stop() {
      await stack.stop()
      await cs.stop()
      await ns.destroy()
      await up.stop()
    },
  }
}
