import { startCaddy, type CaddyHandle, type PrivateFs } from './caddy'
import type { NodeNamespace } from './netns'
import { freePort } from './ports'
import { startPanel, type PanelHandle } from './panel'
import { makeTempDir } from './processes'

export type { CaddyHandle }

/** Every module the production Caddy has (the panel's own default). */
export const ALL_PROXY_MODULES = 'crowdsec,waf,ratelimit,dns,geo,wafshare,storage'

export interface ProxyStack {
  caddy: CaddyHandle
  panel: PanelHandle
  admin: string
  httpPort: number
  httpsPort: number
  logDir: string
  /** Stops the panel and starts it again on the same database, port and settings (`panel` and `admin` are the new ones). */
  restartPanel(): Promise<void>
  stop(): Promise<void>
}

/**
 * A real Caddy plus the built panel driving it: the production Caddy with every
 * module by default; `stockCaddy: true` runs Debian's Caddy 2.6.2 with
 * PROXY_MODULES=none (the compatibility suite). `caddyEnv`: extra environment of
 * the Caddy process (bench/waf.bench.ts runs EDGE_WAF_OPERATORS=none for its A/B).
 */
export async function startProxyStack(
  opts: {
    env?: Record<string, string>
    caddyEnv?: Record<string, string>
    dataDir?: string
    logDir?: string
    httpListenExtra?: string[]
    httpPort?: number
    httpsPort?: number
    stockCaddy?: boolean
    panelPort?: number
    /** Node 1's Caddy in this network namespace (netns.ts createNodeNamespaces). */
    caddyNetns?: NodeNamespace
    /** Node 1's Caddy with a file system of its own (caddy.ts `privateFs`). */
    caddyPrivateFs?: PrivateFs
  } = {},
): Promise<ProxyStack> {
  const caddy = await startCaddy({ stock: opts.stockCaddy, env: opts.caddyEnv, netns: opts.caddyNetns, privateFs: opts.caddyPrivateFs })
  const httpPort = opts.httpPort ?? (await freePort())
  const httpsPort = opts.httpsPort ?? (await freePort())
  const logDir = opts.logDir ?? makeTempDir('proxy-logs-')
  const httpListen = [`127.0.0.1:${httpPort}`, ...(opts.httpListenExtra ?? []).map((a) => `${a}:${httpPort}`)]
  let panel: PanelHandle
  const panelEnv: Record<string, string> = {
    PROXY_ADMIN_URL: caddy.adminUrl,
    PROXY_MODULES: opts.stockCaddy ? 'none' : ALL_PROXY_MODULES,
    PROXY_LOG_DIR: logDir,
    PROXY_DATA_DIR: caddy.storageDir,
    PROXY_HTTP_LISTEN: httpListen.join(','),
    PROXY_HTTPS_LISTEN: `127.0.0.1:${httpsPort}`,
    PANEL_DOMAIN: 'panel.example.test',
    PANEL_PUBLIC_URL: 'https://panel.example.test',
    ...opts.env,
  }
  try {
    panel = await startPanel({ dataDir: opts.dataDir, port: opts.panelPort, env: panelEnv })
  } catch (err) {
    await caddy.stop()
    throw err
  }
  const stack: ProxyStack = {
    caddy,
    panel,
    admin: await panel.login(),
    httpPort,
    httpsPort,
    logDir,
    async restartPanel() {
      await stack.panel.stop()
      stack.panel = await startPanel({ dataDir: stack.panel.dataDir, port: stack.panel.port, env: panelEnv })
      stack.admin = await stack.panel.login()
    },
    async stop() {
      await stack.panel.stop()
      await caddy.stop()
    },
  }
  return stack
}

export async function createGroup(stack: ProxyStack, body: Record<string, unknown>) {
  const res = await stack.panel.request('/api/target-groups', { method: 'POST', cookie: stack.admin, body })
  if (res.status !== 201) throw new Error(`target group create failed: ${res.status} ${res.text}`)
  return res.json
}

export async function createHost(stack: ProxyStack, body: Record<string, unknown>) {
  return stack.panel.request('/api/hosts', { method: 'POST', cookie: stack.admin, body: { tls_mode: 'none', ...body } })
}
