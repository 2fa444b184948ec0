import { describe, expect, it } from 'vitest'
import { buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { buildManualCertificates } from '../../server/utils/proxy/build/tls-manual'
import { buildHostSnapshot, buildSnapshot } from '../support/factories'

const manualHost = (o = {}) => buildHostSnapshot({ tls_mode: 'manual', aliases: ['alt.example.test'], ...o })
const CERT = '-----BEGIN CERTIFICATE-----\nleaf\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nchain\n-----END CERTIFICATE-----\n'
const KEY = '-----BEGIN PRIVATE KEY-----\nkey\n-----END PRIVATE KEY-----\n'
const pem = (hostId: number, certificatePem = CERT, keyPem = KEY) => ({ hostId, certificatePem, keyPem })

describe('buildManualCertificates — uploaded certificates carried by the configuration', () => {
  it('inlines certificate (leaf + chain) and key in load_pem, tagged per host, nothing under load_files, automation skipped', () => {
    const { config } = buildProxyConfig(buildSnapshot({ hosts: [manualHost()], manualCerts: [pem(1)] })) as any
    // In the configuration itself: no node needs a folder shared with the panel.
    expect(config.apps.tls.certificates).toEqual({ load_pem: [{ certificate: CERT, key: KEY, tags: ['panel-host-1'] }] })
    expect(config.apps.tls.certificates.load_files).toBeUndefined()
    expect(JSON.stringify(config)).not.toMatch(/"\/[^"]*\.(crt|key)"/) // no file path left for a certificate
    expect(config.apps.http.servers.https.automatic_https).toEqual({ skip_certificates: ['host1.example.test', 'alt.example.test'] })
    expect(config.apps.tls.automation).toBeUndefined()
  })

  it('keeps HTTP->HTTPS redirects on (no disable_redirects, no skip)', () => {
    const { config } = buildProxyConfig(buildSnapshot({ hosts: [manualHost()], manualCerts: [pem(1)] })) as any
    expect(Object.keys(config.apps.http.servers.https.automatic_https)).toEqual(['skip_certificates'])
  })
})

describe('buildManualCertificates — edge cases', () => {
  it('a manual host without a stored certificate stays skipped (never a public CA) and warns', () => {
    const warnings: string[] = []
    const out = buildManualCertificates(buildSnapshot(), [manualHost()], warnings)
    expect(out).toEqual({ loadPem: [], skipNames: ['host1.example.test', 'alt.example.test'] })
    expect(warnings.join()).toMatch(/host1\.example\.test: tls_mode is manual but no certificate is stored/)
  })

  it('a host that is not manual keeps its certificate out of the configuration (its key too)', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ hosts: [buildHostSnapshot({ id: 3, tls_mode: 'auto' })], manualCerts: [pem(3, 'CERT-3', 'KEY-3')] }),
    ) as any
    expect(config.apps.tls?.certificates).toBeUndefined()
    expect(JSON.stringify(config)).not.toContain('KEY-3')
  })

  it('ignores certificates of hosts that are not manual, and does not depend on input order', () => {
    const certs = [pem(2, 'C2', 'K2'), pem(1, 'C1', 'K1'), pem(3, 'C3', 'K3')]
    const hosts = [
      manualHost({ id: 1, aliases: [] }),
      manualHost({ id: 2, domain: 'two.example.test', aliases: [] }),
      buildHostSnapshot({ id: 3, tls_mode: 'auto', domain: 'three.example.test' }),
    ]
    const a = buildProxyConfig(buildSnapshot({ hosts, manualCerts: certs })).config as any
    const b = buildProxyConfig(buildSnapshot({ hosts: [...hosts].reverse(), manualCerts: [...certs].reverse() })).config
    expect(a.apps.tls.certificates.load_pem.map((f: any) => [f.tags[0], f.certificate, f.key])).toEqual([
      ['panel-host-1', 'C1', 'K1'],
      ['panel-host-2', 'C2', 'K2'],
    ])
    expect(stableStringify(a)).toBe(stableStringify(b))
  })
})
