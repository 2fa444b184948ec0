import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { request } from 'node:https'
import { join } from 'node:path'
import { freePort } from './ports'
import { requireBinary, startProcess, waitFor, makeTempDir } from './processes'

function _httpsGet(url: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, agent: false, timeout: 5_000 }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end()
  })
}

/**
 * Pebble (ACME test CA) with challtestsrv as its DNS: every name resolves to
 * 127.0.0.1, where Caddy must listen on `httpPort` (http-01) and `tlsPort` (tls-alpn-01).
 */
export async function startPebble(opts: { httpPort: number; tlsPort: number }) {
  requireBinary('/usr/bin/pebble', 'pebble')
  requireBinary('/usr/bin/pebble-challtestsrv', 'pebble-challtestsrv')
  const dir = makeTempDir('pebble-')
  const ssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' })
  ssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '30', '-subj', '/CN=pebble test CA', '-keyout', 'ca.key', '-out', 'ca.pem'])
  ssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', 'key.pem', '-out', 'csr.pem'])
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n')
  ssl(['x509', '-req', '-in', 'csr.pem', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '30', '-out', 'cert.pem', '-extfile', 'ext.cnf'])
  const [dnsPort, challMgmt, acmePort, mgmtPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()])
  writeFileSync(join(dir, 'pebble-config.json'), JSON.stringify({
    pebble: {
      listenAddress: `127.0.0.1:${acmePort}`, managementListenAddress: `127.0.0.1:${mgmtPort}`,
      certificate: join(dir, 'cert.pem'), privateKey: join(dir, 'key.pem'),
      httpPort: opts.httpPort, tlsPort: opts.tlsPort, ocspResponderURL: '', externalAccountBindingRequired: false,
    },
  }))
  const chall = startProcess('/usr/bin/pebble-challtestsrv', [
    '-dns01', `127.0.0.1:${dnsPort}`, '-http01', '', '-https01', '', '-tlsalpn01', '',
    '-management', `127.0.0.1:${challMgmt}`, '-defaultIPv4', '127.0.0.1', '-defaultIPv6', '',
  ], { cwd: dir, logFile: join(dir, 'challtestsrv.log') })
  const pebble = startProcess('/usr/bin/pebble', ['-config', join(dir, 'pebble-config.json'), '-dnsserver', `127.0.0.1:${dnsPort}`], {
    cwd: dir, logFile: join(dir, 'pebble.log'), env: { PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0' },
  })
  const caPem = readFileSync(join(dir, 'ca.pem'), 'utf8')
  const directoryUrl = `https://127.0.0.1:${acmePort}/dir`
  try {
    await waitFor(async () => (await _httpsGet(directoryUrl, caPem)).status === 200, { timeoutMs: 15_000, what: 'pebble', logFile: join(dir, 'pebble.log') })
  } catch (err) {
    await pebble.stop(); await chall.stop()
    throw err
  }
  return {
    directoryUrl,
    caPemFile: join(dir, 'ca.pem'),
    challtestsrvManagementUrl: `http://127.0.0.1:${challMgmt}`,
    /** The root that signs issued certificates (new on every Pebble start). */
    async issuingRootPem(): Promise<string> { return (await _httpsGet(`https://127.0.0.1:${mgmtPort}/roots/0`, caPem)).body },
    async stop() { await pebble.stop(); await chall.stop() },
  }
}
