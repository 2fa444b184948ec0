import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto'
import { badRequest } from '../core/errors'

// Checks an uploaded certificate the way a TLS client would, before anything
// is stored: every failure names the check that failed.

const _PEM_BLOCK = /-----BEGIN ([A-Z ]+)-----[\s\S]+?-----END \1-----/g

export function splitPemBlocks(text: string, label: string): string[] {
  return [...text.matchAll(_PEM_BLOCK)].filter((m) => m[1] === label).map((m) => m[0])
}

export interface CertificateMetadata {
  subject: string
  issuer: string
  sans: string[]
  not_before: string
  not_after: string
  fingerprint_sha256: string
}

function _dnsNames(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.startsWith('DNS:'))
    .map((s) => s.slice(4))
}

function _cn(dn: string): string {
  const m = /(?:^|\n|,\s*)CN=([^\n,]+)/.exec(dn)
  return m ? m[1]! : dn.replace(/\n/g, ', ')
}

export function describeCertificate(cert: X509Certificate): CertificateMetadata {
  return {
    subject: _cn(cert.subject),
    issuer: _cn(cert.issuer),
    sans: _dnsNames(cert),
    not_before: new Date(cert.validFrom).toISOString(),
    not_after: new Date(cert.validTo).toISOString(),
    fingerprint_sha256: cert.fingerprint256.replace(/:/g, '').toLowerCase(),
  }
}

export interface ValidatedUpload {
  leafPem: string
  chainPem: string | null
  keyPem: string
  metadata: CertificateMetadata
}

export function validateCertificateUpload(
  parts: { certPem: string; keyPem: string; chainPem?: string | null },
  names: string[],
  nowMs = Date.now(),
): ValidatedUpload {
  const certBlocks = splitPemBlocks(parts.certPem, 'CERTIFICATE')
  if (!certBlocks.length) throw badRequest('cert_pem: is not a PEM certificate (expected -----BEGIN CERTIFICATE-----)')
  let leaf: X509Certificate
  let chain: X509Certificate[]
  try {
    leaf = new X509Certificate(certBlocks[0]!)
    chain = [...certBlocks.slice(1), ...splitPemBlocks(parts.chainPem ?? '', 'CERTIFICATE')].map((b) => new X509Certificate(b))
  } catch {
    throw badRequest('cert_pem: the certificate cannot be parsed')
  }
  if (parts.chainPem?.trim() && !splitPemBlocks(parts.chainPem, 'CERTIFICATE').length)
    throw badRequest('chain_pem: is not PEM certificates')
  let key: KeyObject
  try {
    key = createPrivateKey(parts.keyPem)
  } catch {
    throw badRequest('key_pem: is not a PEM private key (an encrypted key must be decrypted first)')
  }
  if (!leaf.checkPrivateKey(key)) throw badRequest('key_pem: the private key does not match the certificate')
  let child = leaf
  for (const [i, issuer] of chain.entries()) {
    if (!child.checkIssued(issuer) || !child.verify(issuer.publicKey))
      throw badRequest(
        `chain_pem: certificate ${i + 1} of the chain did not sign ${i === 0 ? 'the certificate' : `chain certificate ${i}`}`,
      )
    child = issuer
  }
  if (Date.parse(leaf.validTo) <= nowMs) throw badRequest(`cert_pem: the certificate expired on ${new Date(leaf.validTo).toISOString()}`)
  const uncovered = names.filter((n) => !leaf.checkHost(n, { subject: 'default', wildcards: true }))
  if (uncovered.length)
    throw badRequest(
      `cert_pem: the certificate does not cover ${uncovered.join(', ')} (it names ${_dnsNames(leaf).join(', ') || _cn(leaf.subject)})`,
    )
  return {
    leafPem: leaf.toString(),
    chainPem: chain.length ? chain.map((c) => c.toString()).join('') : null,
    keyPem: key.export({ type: 'pkcs8', format: 'pem' }).toString(),
    metadata: describeCertificate(leaf),
  }
}
