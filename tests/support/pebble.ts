import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freshRequest } from './admin-http'
import { freePorts } from './ports'
import { makeTempDir, requireBinary, startProcess, waitFor, type ManagedProcess } from './processes'

export const PEBBLE_BIN = '/usr/bin/pebble'
export const CHALLTESTSRV_BIN = '/usr/bin/pebble-challtestsrv'

export interface PebbleHandle {
  /** 'https://127.0.0.1:<port>/dir': the ACME directory (for the issuer's `ca`). */
  directoryUrl: string
  /** The CA that signed Pebble's own HTTPS certificate: Caddy's `trusted_roots_pem_files`. */
  caPemFile: string
  /** Same CA, as PEM text (to trust Pebble's ACME and management endpoints). */
  caPem: string
  /** 'https://127.0.0.1:<port>': Pebble's management API (roots, intermediates, cert status). */
  managementUrl: string
  /** 'http://127.0.0.1:<port>': challtestsrv's API (add-a, clear-a, ...). */
  challtestsrvManagementUrl: string
  /** The DNS server Pebble validates through ('127.0.0.1:<port>'): challtestsrv's, or `dnsServer`. */
  dnsServer: string
  workDir: string
  pebblePid: number
  challtestsrvPid: number
  pebbleLogFile: string
  challtestsrvLogFile: string
  /** Milliseconds from starting challtestsrv until Pebble's directory answered. */
  startMs: number
  /** The root that signs issued certificates (GET <management>/roots/0; new on every Pebble start). */
  issuingRootPem(): Promise<string>
  /** Maps `host` to these addresses in the mock DNS (instead of the default 127.0.0.1). */
  addA(host: string, addresses: string[]): Promise<void>
  stop(): Promise<void>
}

/**
 * Pebble (ACME test CA) with pebble-challtestsrv as its DNS: every A query answers
 * 127.0.0.1 (no AAAA), so any name validates against the Caddy that listens on
 * `httpPort` (http-01) and `tlsPort` (tls-alpn-01) on loopback. Those must equal
 * Caddy's http_port / https_port.
 *
 * Options for DNS-01 tests: `dnsServer` makes Pebble resolve through that server
 * instead (e.g. BIND from bind.ts; challtestsrv still runs, unused);
 * `certificateValiditySeconds` shortens issued certificates (Pebble's
 * certificateValidityPeriod); `env` adds Pebble variables (PEBBLE_AUTHZREUSE=0
 * makes every order solve its challenges again).
 */
export async function startPebble(opts: {
  httpPort: number
  tlsPort: number
  dnsServer?: string
  certificateValiditySeconds?: number
  env?: Record<string, string>
  /** Where the ACME directory listens (default 127.0.0.1): a node in a network namespace reaches the host at its veth's host end. */
  listenHost?: string
}): Promise<PebbleHandle> {
  const acmeHost = opts.listenHost ?? '127.0.0.1'
  requireBinary(PEBBLE_BIN, 'pebble')
  requireBinary(CHALLTESTSRV_BIN, 'pebble-challtestsrv')
  requireBinary('/usr/bin/openssl', 'openssl')
  const dir = makeTempDir('pebble-')
  const ssl = (args: string[]) => {
    try {
      execFileSync('/usr/bin/openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
    } catch (err) {
      throw new Error(`openssl ${args.join(' ')} failed: ${(err as { stderr?: Buffer }).stderr?.toString() ?? err}`)
    }
  }
  ssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '30',
    '-subj',
    '/CN=pebble test CA',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
  ])
  ssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', 'key.pem', '-out', 'csr.pem'])
  writeFileSync(
    join(dir, 'ext.cnf'),
    `subjectAltName=DNS:localhost,IP:127.0.0.1${acmeHost === '127.0.0.1' ? '' : `,IP:${acmeHost}`}\nextendedKeyUsage=serverAuth\n`,
  )
  ssl([
    'x509',
    '-req',
    '-in',
    'csr.pem',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '30',
    '-out',
    'cert.pem',
    '-extfile',
    'ext.cnf',
  ])
  const [dnsPort, challMgmt, acmePort, mgmtPort] = await freePorts(4)
  writeFileSync(
    join(dir, 'pebble-config.json'),
    JSON.stringify({
      pebble: {
        listenAddress: `${acmeHost}:${acmePort}`,
        managementListenAddress: `127.0.0.1:${mgmtPort}`,
        certificate: join(dir, 'cert.pem'),
        privateKey: join(dir, 'key.pem'),
        httpPort: opts.httpPort,
        tlsPort: opts.tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
        ...(opts.certificateValiditySeconds ? { certificateValidityPeriod: opts.certificateValiditySeconds } : {}),
      },
    }),
  )
  const caPemFile = join(dir, 'ca.pem')
  const caPem = readFileSync(caPemFile, 'utf8')
  const directoryUrl = `https://${acmeHost}:${acmePort}/dir`
  const managementUrl = `https://127.0.0.1:${mgmtPort}`
  const challtestsrvManagementUrl = `http://127.0.0.1:${challMgmt}`
  const challLog = join(dir, 'challtestsrv.log'),
    pebbleLog = join(dir, 'pebble.log')

  const t0 = performance.now()
  const chall = startProcess(
    CHALLTESTSRV_BIN,
    [
      '-dns01',
      `127.0.0.1:${dnsPort}`,
      '-http01',
      '',
      '-https01',
      '',
      '-tlsalpn01',
      '',
      '-management',
      `127.0.0.1:${challMgmt}`,
      '-defaultIPv4',
      '127.0.0.1',
      '-defaultIPv6',
      '',
    ],
    { cwd: dir, logFile: challLog },
  )
  let pebble: ManagedProcess | undefined
  try {
    // Any HTTP answer from the management port means challtestsrv (and its DNS) is up.
    await waitFor(async () => (await freshRequest(`${challtestsrvManagementUrl}/`, { timeoutMs: 2_000 })).status > 0, {
      timeoutMs: 60_000,
      what: 'pebble-challtestsrv',
      process: chall,
    })
    pebble = startProcess(
      PEBBLE_BIN,
      ['-config', join(dir, 'pebble-config.json'), '-dnsserver', opts.dnsServer ?? `127.0.0.1:${dnsPort}`],
      {
        cwd: dir,
        logFile: pebbleLog,
        env: { PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', ...opts.env },
      },
    )
    await waitFor(async () => (await freshRequest(directoryUrl, { ca: caPem, timeoutMs: 2_000 })).status === 200, {
      timeoutMs: 60_000,
      what: 'pebble',
      process: pebble,
    })
  } catch (err) {
    await pebble?.stop()
    await chall.stop()
    throw err
  }
  const startMs = Math.round(performance.now() - t0)
  const pebbleProc = pebble
  return {
    directoryUrl,
    caPemFile,
    caPem,
    managementUrl,
    challtestsrvManagementUrl,
    dnsServer: opts.dnsServer ?? `127.0.0.1:${dnsPort}`,
    workDir: dir,
    pebblePid: pebbleProc.pid,
    challtestsrvPid: chall.pid,
    pebbleLogFile: pebbleLog,
    challtestsrvLogFile: challLog,
    startMs,
    async issuingRootPem() {
      const r = await freshRequest(`${managementUrl}/roots/0`, { ca: caPem })
      if (r.status !== 200 || !r.body.includes('BEGIN CERTIFICATE')) throw new Error(`pebble /roots/0 answered ${r.status}: ${r.body}`)
      return r.body
    },
    async addA(host, addresses) {
      const r = await freshRequest(`${challtestsrvManagementUrl}/add-a`, { method: 'POST', body: JSON.stringify({ host, addresses }) })
      if (r.status !== 200) throw new Error(`challtestsrv add-a answered ${r.status}: ${r.body}`)
    },
    async stop() {
      await pebbleProc.stop()
      await chall.stop()
    },
  }
}
