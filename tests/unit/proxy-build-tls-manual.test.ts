import { describe, expect, it } from 'vitest'
import { buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { buildManualCertificates } from '../../server/utils/proxy/build/tls-manual'
import { buildHostSnapshot, buildSnapshot } from '../support/factories'

const manualHost = (o = {}) => buildHostSnapshot({ tls_mode: 'manual', aliases: ['alt.example.test'], ...o })

describe('buildManualCertificates — uploaded certificates as files', () => {
  it('loads the files tagged per host and skips automation for every name of the host', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        hosts: [manualHost()],
        manualCerts: [{ hostId: 1, certFile: '/certs/1.crt', keyFile: '/certs/1.key' }],
      }),
    ) as any
    expect(config.apps.tls.certificates.load_files).toEqual([{ certificate: '/certs/1.crt', key: '/certs/1.key', tags: ['panel-host-1'] }])
    expect(config.apps.http.servers.https.automatic_https).toEqual({ skip_certificates: ['host1.example.test', 'alt.example.test'] })
    expect(config.apps.tls.automation).toBeUndefined()
    expect(JSON.stringify(config)).not.toContain('BEGIN') // never inline PEM
  })

  it('keeps HTTP->HTTPS redirects on (no disable_redirects, no skip)', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ hosts: [manualHost()], manualCerts: [{ hostId: 1, certFile: '/c', keyFile: '/k' }] }),
    ) as any
    expect(Object.keys(config.apps.http.servers.https.automatic_https)).toEqual(['skip_certificates'])
  })
})

describe('buildManualCertificates — edge cases', () => {
  it('a manual host without a stored certificate stays skipped (never a public CA) and warns', () => {
    const warnings: string[] = []
    const out = buildManualCertificates(buildSnapshot(), [manualHost()], warnings)
    expect(out).toEqual({ loadFiles: [], skipNames: ['host1.example.test', 'alt.example.test'] })
    expect(warnings.join()).toMatch(/host1\.example\.test: tls_mode is manual but no certificate is stored/)
  })

  it('ignores certificates of hosts that are not manual, and does not depend on input order', () => {
    const certs = [
      { hostId: 2, certFile: '/c2', keyFile: '/k2' },
      { hostId: 1, certFile: '/c1', keyFile: '/k1' },
      { hostId: 3, certFile: '/c3', keyFile: '/k3' },
    ]
    const hosts = [
      manualHost({ id: 1, aliases: [] }),
      manualHost({ id: 2, domain: 'two.example.test', aliases: [] }),
      buildHostSnapshot({ id: 3, tls_mode: 'auto', domain: 'three.example.test' }),
    ]
    const a = buildProxyConfig(buildSnapshot({ hosts, manualCerts: certs })).config as any
    const b = buildProxyConfig(buildSnapshot({ hosts: [...hosts].reverse(), manualCerts: [...certs].reverse() })).config
    expect(a.apps.tls.certificates.load_files.map((f: any) => f.tags[0])).toEqual(['panel-host-1', 'panel-host-2'])
    expect(stableStringify(a)).toBe(stableStringify(b))
  })
})
