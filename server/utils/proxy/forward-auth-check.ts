import { randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { z } from 'zod'
import { getConfig, type PanelConfig } from '../core/config'
import { upstreamFailed } from '../core/errors'
import { FORWARD_AUTH_PROBE_HOST } from './build/forward-auth'
import { panelUpstreamOf } from './snapshot'

// Can the proxy reach the panel's ForwardAuth endpoint? Asked through the proxy
// itself: the panel sends one request to the proxy's plain HTTP listener with the
// probe's Host (build/forward-auth.ts), the proxy runs the same sub-request every
// protected host runs, to the same address (PANEL_INTERNAL_URL), and the answer
// says whether it arrived. A nonce header, copied by the proxy onto its
// sub-request, proves it reached this panel and not something else listening there.

export const FORWARD_AUTH_PROBE_HEADER = 'x-panel-forward-auth-probe'
const _PROBE_TIMEOUT_MS = 15_000
const _SELF_TIMEOUT_MS = 3_000
const _pending = new Map<string, boolean>() // nonce -> the panel saw the proxy's sub-request

/** Called by /auth/forward for every sub-request: marks a probe's arrival (a map lookup when one is running). */
export function noteForwardAuthProbe(nonce: string | undefined): void {
  if (nonce && _pending.has(nonce)) _pending.set(nonce, true)
}

export type ForwardAuthReach = 'reachable' | 'unreachable' | 'not_this_panel' | 'probe_missing'

export interface ForwardAuthCheck {
  state: ForwardAuthReach
  /** What was found and, when it fails, what to change. */
  message: string
  /** The address the proxy dials for ForwardAuth (from PANEL_INTERNAL_URL). */
  panel_address: string
  /** Where the panel sent the probe (the proxy's plain HTTP listener). */
  proxy_address: string
  /** The proxy's status answer to the probe. */
  proxy_status: number
  checked_at: string
}

/** The check takes no parameter; an unknown one is refused like everywhere else. */
export const forwardAuthCheckQuery = z.strictObject({})

/** The proxy's plain listener as the panel reaches it: its own address, or the admin API's host when it listens on every address. */
export function proxyHttpAddress(proxy: Pick<PanelConfig['proxy'], 'httpListen' | 'httpPort' | 'adminUrl'>): {
  host: string
  port: number
} {
  const listen = proxy.httpListen[0] ?? `:${proxy.httpPort}`
  const host = listen.slice(0, listen.lastIndexOf(':')).replace(/^\[|\]$/g, '')
  const everywhere = !host || host === '0.0.0.0' || host === '::'
  return { host: everywhere ? new URL(proxy.adminUrl).hostname.replace(/^\[|\]$/g, '') : host, port: proxy.httpPort }
}

function _send(
  target: { host: string; port: number },
  headers: Record<string, string>,
): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.host,
        port: target.port,
        path: '/',
        method: 'GET',
        agent: false,
        timeout: _PROBE_TIMEOUT_MS,
        headers: { connection: 'close', ...headers },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location }))
      },
    )
    req.on('timeout', () => req.destroy(new Error(`no answer within ${_PROBE_TIMEOUT_MS / 1000} s`)))
    req.on('error', reject)
    req.end()
  })
}

/** Does anything answer the panel's own /healthz at PANEL_INTERNAL_URL, asked from the panel's side? */
async function _answersFromPanelSide(internalUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${internalUrl}/healthz`, { signal: AbortSignal.timeout(_SELF_TIMEOUT_MS) })
    return (await res.text()) === 'ok'
  } catch {
    return false
  }
}

export async function checkForwardAuthReachability(): Promise<ForwardAuthCheck> {
  const cfg = getConfig()
  const dial = panelUpstreamOf(cfg.internalUrl).dial
  const target = proxyHttpAddress(cfg.proxy)
  const proxyAddress = `http://${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`
  const nonce = randomBytes(16).toString('hex')
  _pending.set(nonce, false)
  let answer: { status: number; location: string | undefined }
  try {
    answer = await _send(target, { host: FORWARD_AUTH_PROBE_HOST, [FORWARD_AUTH_PROBE_HEADER]: nonce })
  } catch (err) {
    _pending.delete(nonce)
    throw upstreamFailed(
      `the panel could not send its probe to the proxy's HTTP listener at ${proxyAddress} (${(err as Error).message}), so whether the proxy reaches the panel is unknown: check PROXY_HTTP_LISTEN and that the proxy runs`,
    )
  }
  const arrived = _pending.get(nonce) === true
  _pending.delete(nonce)
  const result = (state: ForwardAuthReach, message: string): ForwardAuthCheck => ({
    state,
    message,
    panel_address: dial,
    proxy_address: proxyAddress,
    proxy_status: answer.status,
    checked_at: new Date().toISOString(),
  })
  if (arrived)
    return result(
      'reachable',
      `the proxy reached the panel at ${dial} (PANEL_INTERNAL_URL) and got its answer${answer.location ? `: a visitor who is not signed in is sent to ${answer.location}` : ''}`,
    )
  if (answer.status === 404)
    return result(
      'probe_missing',
      `the proxy answered 404 for the probe: it does not hold the panel's current configuration (is a push pending? see the dashboard's proxy health)`,
    )
  if (answer.status >= 500) {
    const fromPanel = await _answersFromPanelSide(cfg.internalUrl)
    // Said as origin only: a user:password in PANEL_INTERNAL_URL (the proxy never sends one) stays out of the answer.
    const internal = new URL(cfg.internalUrl).origin
    return result(
      'unreachable',
      fromPanel
        ? `the proxy could not reach the panel at ${dial} (it answered ${answer.status}), although the panel answers at ${internal} from its own side: the proxy's network does not reach that address (another network, a firewall, or a name the proxy resolves differently); set PANEL_INTERNAL_URL to an address the proxy reaches`
        : `the proxy could not reach the panel at ${dial} (it answered ${answer.status}), and nothing answers at ${internal} from the panel's side either: set PANEL_INTERNAL_URL to the address the proxy reaches the panel at (the panel listens on port ${cfg.port})`,
    )
  }
  return result(
    'not_this_panel',
    `the proxy reached something at ${dial} that is not this panel (it answered ${answer.status} without asking the panel): set PANEL_INTERNAL_URL to the address the proxy reaches this panel at`,
  )
}
