import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { buildHostSnapshot, buildSnapshot } from '../support/factories'

describe('buildManualCertificates — uploaded certificates as files', () => {
  it('loads the files, tags them per host and skips automation for the host names', () => {
    const { config } = buildProxyConfig(buildSnapshot({
      hosts: [buildHostSnapshot({ tls_mode: 'manual', aliases: ['alt.example.test'] })],
      manualCerts: [{ hostId: 1, certFile: '/certs/1.crt', keyFile: '/certs/1.key' }],
    })) as any
    expect(config.apps.tls.certificates.load_files).toEqual([{ certificate: '/certs/1.crt', key: '/certs/1.key', tags: ['panel-host-1'] }])
    expect(config.apps.http.servers.https.automatic_https.skip_certificates).toEqual(['host1.example.test', 'alt.example.test'])
    expect(config.apps.tls.automation).toBeUndefined()
    expect(JSON.stringify(config)).not.toContain('BEGIN') // never inline PEM
  })
})
