import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeTempDir } from './processes'

// Real certificates for upload tests, made with openssl: a root, an
// intermediate, and leaves signed by the intermediate (or not).

export interface TestPki {
  dir: string
  rootPem: string
  intermediatePem: string
  leaf(
    name: string,
    opts?: { sans?: string[]; expired?: boolean; signer?: 'intermediate' | 'self'; days?: number },
  ): { certPem: string; keyPem: string }
}

export function createTestPki(): TestPki {
  const dir = makeTempDir('pki-')
  const ssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
  writeFileSync(join(dir, 'ca.ext'), 'basicConstraints=critical,CA:true\nkeyUsage=critical,keyCertSign,cRLSign\n')
  ssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '30',
    '-subj',
    '/CN=Panel Test Root',
    '-keyout',
    'root.key',
    '-out',
    'root.pem',
    '-addext',
    'basicConstraints=critical,CA:true',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ])
  ssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=Panel Test Intermediate', '-keyout', 'inter.key', '-out', 'inter.csr'])
  ssl([
    'x509',
    '-req',
    '-in',
    'inter.csr',
    '-CA',
    'root.pem',
    '-CAkey',
    'root.key',
    '-CAcreateserial',
    '-days',
    '30',
    '-out',
    'inter.pem',
    '-extfile',
    'ca.ext',
  ])
  writeFileSync(join(dir, 'index.txt'), '')
  writeFileSync(join(dir, 'serial'), '1000\n')
  writeFileSync(
    join(dir, 'ca.cnf'),
    `[ca]\ndefault_ca = d\n[d]\ndir = ${dir}\ndatabase = ${dir}/index.txt\nnew_certs_dir = ${dir}\nserial = ${dir}/serial\ndefault_md = sha256\npolicy = any\ncopy_extensions = copy\nunique_subject = no\n[any]\ncommonName = supplied\n`,
  )
  let n = 0
  return {
    dir,
    rootPem: readFileSync(join(dir, 'root.pem'), 'utf8'),
    intermediatePem: readFileSync(join(dir, 'inter.pem'), 'utf8'),
    leaf(name, opts = {}) {
      const id = `leaf${++n}`
      const sans = (opts.sans ?? [name]).map((s) => `DNS:${s}`).join(',')
      ssl([
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-subj',
        `/CN=${name}`,
        '-keyout',
        `${id}.key`,
        '-out',
        `${id}.csr`,
        '-addext',
        `subjectAltName=${sans}`,
      ])
      if (opts.signer === 'self') {
        ssl([
          'req',
          '-x509',
          '-key',
          `${id}.key`,
          '-days',
          '30',
          '-subj',
          `/CN=${name}`,
          '-out',
          `${id}.pem`,
          '-addext',
          `subjectAltName=${sans}`,
        ])
      } else {
        const dates = opts.expired ? ['-startdate', '20200101000000Z', '-enddate', '20200201000000Z'] : ['-days', String(opts.days ?? 30)]
        ssl([
          'ca',
          '-batch',
          '-notext',
          '-config',
          'ca.cnf',
          '-cert',
          'inter.pem',
          '-keyfile',
          'inter.key',
          '-in',
          `${id}.csr`,
          '-out',
          `${id}.pem`,
          ...dates,
        ])
      }
      return { certPem: readFileSync(join(dir, `${id}.pem`), 'utf8'), keyPem: readFileSync(join(dir, `${id}.key`), 'utf8') }
    },
  }
}

/**
 * A self-signed client certificate (P-256, clientAuth) as Caddy's remote admin
 * endpoint accepts it: `derBase64` is what admin.remote.access_control.public_keys lists.
 */
export function createClientCertificate(commonName: string): { certPem: string; keyPem: string; derBase64: string } {
  const dir = makeTempDir('client-cert-')
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${commonName}`,
      '-addext',
      'extendedKeyUsage=clientAuth',
      '-keyout',
      'key.pem',
      '-out',
      'cert.pem',
    ],
    { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
  )
  const certPem = readFileSync(join(dir, 'cert.pem'), 'utf8')
  const derBase64 = certPem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '')
  return { certPem, keyPem: readFileSync(join(dir, 'key.pem'), 'utf8'), derBase64 }
}
