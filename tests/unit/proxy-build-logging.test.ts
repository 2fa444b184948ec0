import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { FORWARD_AUTH_PROBE_HOST } from '../../server/utils/proxy/build/forward-auth'
import { buildLogging, buildServerLogs } from '../../server/utils/proxy/build/logging'
import { buildHostSnapshot, buildSnapshot } from '../support/factories'

describe('buildLogging — the three logs', () => {
  const logs = (buildLogging('/var/log/panel') as any).logs

  it('access: JSON lines to <logDir>/access.log, every access logger included', () => {
    expect(logs.access).toEqual({
      writer: { output: 'file', filename: '/var/log/panel/access.log' },
      encoder: { format: 'json' },
      include: ['http.log.access'],
    })
  })

  it('error: <logDir>/error.log at DEBUG, so 4xx handler errors (WAF 403, rate limit 429) are kept; certificate and health-check lines too', () => {
    expect(logs.error).toEqual({
      writer: { output: 'file', filename: '/var/log/panel/error.log' },
      encoder: { format: 'json' },
      level: 'DEBUG',
      include: ['http.log.error', 'tls.obtain', 'tls.renew', 'http.handlers.reverse_proxy.health_checker'],
    })
  })

  it('default: everything except access, error, certificate and health-check lines', () => {
    expect(logs.default).toEqual({
      exclude: ['http.log.access', 'http.log.error', 'tls.obtain', 'tls.renew', 'http.handlers.reverse_proxy.health_checker'],
    })
  })

  it('is the logging block of the whole config', () => {
    expect((buildProxyConfig(buildSnapshot({ logDir: '/logs' })).config as any).logging).toEqual(buildLogging('/logs'))
  })
})

describe('buildServerLogs — per-host logger names', () => {
  it('maps every name of a host to one string host_<id> (the only shape Caddy 2.6.2 accepts; 2.11 still does)', () => {
    expect(buildServerLogs([buildHostSnapshot({ id: 4, aliases: ['a.example.test', '*.w.example.test'] })])).toEqual({
      logger_names: { 'host4.example.test': 'host_4', 'a.example.test': 'host_4', '*.w.example.test': 'host_4' },
      skip_hosts: [FORWARD_AUTH_PROBE_HOST],
    })
  })

  it('both servers know every host: the plain one also answers TLS hosts (redirects, http-01)', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ hosts: [buildHostSnapshot(), buildHostSnapshot({ id: 2, tls_mode: 'auto' })] }),
    ) as any
    const expected = { 'host1.example.test': 'host_1', 'host2.example.test': 'host_2' }
    expect(config.apps.http.servers.http.logs).toEqual({ logger_names: expected, skip_hosts: [FORWARD_AUTH_PROBE_HOST] })
    expect(config.apps.http.servers.https.logs).toEqual({ logger_names: expected, skip_hosts: [FORWARD_AUTH_PROBE_HOST] })
  })

  it('leaves out disabled and skipped hosts, but keeps access logging on with no host at all', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ hosts: [buildHostSnapshot({ enabled: false }), buildHostSnapshot({ id: 2, target_group_id: 99 })] }),
    ) as any
    expect(config.apps.http.servers.http.logs).toEqual({ logger_names: {}, skip_hosts: [FORWARD_AUTH_PROBE_HOST] })
  })
})
