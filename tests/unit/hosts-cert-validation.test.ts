import { beforeAll, describe, expect, it } from 'vitest'
import { validateCertificateUpload } from '../../server/utils/hosts/cert-validation'
import { createTestPki, type TestPki } from '../support/certs'

let pki: TestPki
let good: { certPem: string; keyPem: string }
beforeAll(() => {
  pki = createTestPki()
  good = pki.leaf('app.example.test', { sans: ['app.example.test', 'www.example.test'] })
})

describe('validateCertificateUpload — every check names what failed', () => {
  it('accepts a leaf with its chain and describes it', () => {
    const v = validateCertificateUpload({ ...good, chainPem: pki.intermediatePem }, ['app.example.test', 'www.example.test'])
    expect(v.metadata).toMatchObject({
      subject: 'app.example.test',
      issuer: 'Panel Test Intermediate',
      sans: ['app.example.test', 'www.example.test'],
    })
    expect(v.metadata.fingerprint_sha256).toMatch(/^[0-9a-f]{64}$/)
    expect(v.chainPem).toContain('BEGIN CERTIFICATE')
    expect(v.keyPem).toContain('PRIVATE KEY')
  })
  it('garbage PEM', () =>
    expect(() => validateCertificateUpload({ certPem: 'hello', keyPem: good.keyPem }, [])).toThrow(/cert_pem: is not a PEM certificate/))
  it('a key that does not match', () => {
    const other = pki.leaf('app.example.test')
    expect(() => validateCertificateUpload({ certPem: good.certPem, keyPem: other.keyPem }, ['app.example.test'])).toThrow(/does not match/)
  })
  it('a chain that does not sign the certificate', () => {
    expect(() => validateCertificateUpload({ ...good, chainPem: pki.rootPem }, ['app.example.test'])).toThrow(
      /chain_pem: certificate 1 of the chain did not sign/,
    )
  })
  it('an expired certificate', () => {
    const old = pki.leaf('app.example.test', { expired: true })
    expect(() => validateCertificateUpload(old, ['app.example.test'])).toThrow(/expired on 2020-02-01/)
  })
  it('names that are not covered', () => {
    expect(() => validateCertificateUpload(good, ['app.example.test', 'api.example.test'])).toThrow(/does not cover api.example.test/)
  })
  it('a key that is not PEM', () =>
    expect(() => validateCertificateUpload({ certPem: good.certPem, keyPem: 'nope' }, [])).toThrow(/key_pem: is not a PEM private key/))
})
