import type { HostSnapshot, Json, ProxySnapshot } from './types'

export function hostUsesBouncer(snapshot: ProxySnapshot, host: HostSnapshot): boolean {
  return snapshot.modules.includes('crowdsec') && !!snapshot.security.bouncerKey && host.bouncer_enabled
}

/** The bouncer handler: a banned source gets 403 before the WAF sees anything. */
export function buildCrowdsecHandler(): Json {
  return { handler: 'crowdsec' }
}

/** `apps.crowdsec`: the streaming bouncer's connection to the local API. */
export function buildCrowdsecApp(security: ProxySnapshot['security']): Json {
  return {
    api_url: security.lapiUrl.endsWith('/') ? security.lapiUrl : `${security.lapiUrl}/`,
    api_key: security.bouncerKey,
    ticker_interval: security.tickerInterval,
    enable_streaming: true,
    ...(security.appsecUrl ? { appsec_url: security.appsecUrl, appsec_fail_open: true } : {}),
  }
}
