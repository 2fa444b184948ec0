import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createServer, type Server, type TLSSocket } from 'node:tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { STREAM_DEFAULTS, type Stream } from '../../server/utils/streams/schemas'
import { startCaddy, type CaddyHandle } from '../support/caddy'
import { createTestPki } from '../support/certs'
import { buildGroupSnapshot, buildHostSnapshot, buildSnapshot } from '../support/factories'
import { createPublicClientNamespace } from '../support/netns'
import { freePort } from '../support/ports'
import { makeTempDir, waitFor } from '../support/processes'
import { startTestUpstream, type TestUpstream } from '../support/upstream'

// SNI routing through the production Caddy (docs/streams.md, "SNI routing"): two TLS
// upstreams behind the one HTTPS port, each chosen by the ClientHello's server name
// and reached with its own certificate (the proxy never terminates their TLS), while
// an HTTPS web host on the same port still answers through the HTTP app; plus a
// wildcard stream on a port of its own. The client is in the test network namespace.

const HOST_ADDR = '198.51.100.1'

let caddy: CaddyHandle
let web: TestUpstream
let ns: Awaited<ReturnType<typeof createPublicClientNamespace>>
let httpsPort: number
let sniPort: number
let logDir: string
const tlsUpstreams: Server[] = []

/** A TLS upstream with a self-signed certificate for `name` that greets each connection with its name and closes it. */
async function startTlsUpstream(name: string, cert: { certPem: string; keyPem: string }): Promise<number> {
  const port = await freePort()
  const server = createServer({ cert: cert.certPem, key: cert.keyPem }, (socket: TLSSocket) => {
    socket.end(`upstream ${name} saw ${socket.servername ?? 'no name'}\n`)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  tlsUpstreams.push(server)
  return port
}

function stream(overrides: Partial<Stream>): Stream {
  return { ...STREAM_DEFAULTS, id: 1, name: 's', protocol: 'tcp', listen_port: 0, target_group_id: 0, ...overrides }
}

beforeAll(async () => {
  const pki = createTestPki()
  const webCert = pki.leaf('www.example.test', { signer: 'self' })
  const alphaPort = await startTlsUpstream('alpha', pki.leaf('alpha.example.test', { signer: 'self' }))
  const betaPort = await startTlsUpstream('beta', pki.leaf('beta.example.test', { signer: 'self' }))
  web = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: HOST_ADDR, clientAddresses: ['198.51.100.10'] })
  caddy = await startCaddy()
  const httpPort = await freePort()
  httpsPort = await freePort()
  sniPort = await freePort()
  logDir = makeTempDir('sni-logs-')
  const { config, warnings } = buildProxyConfig(
    buildSnapshot({
      adminListen: caddy.adminListen,
      storageRoot: caddy.storageDir,
      logDir,
      httpListen: [`127.0.0.1:${httpPort}`, `${HOST_ADDR}:${httpPort}`],
      httpsListen: [`127.0.0.1:${httpsPort}`, `${HOST_ADDR}:${httpsPort}`],
      httpPort,
      httpsPort,
      hosts: [buildHostSnapshot({ id: 1, domain: 'www.example.test', tls_mode: 'manual', target_group_id: 1, bouncer_enabled: false })],
      manualCerts: [{ hostId: 1, certificatePem: webCert.certPem, keyPem: webCert.keyPem }],
      targetGroups: [
        buildGroupSnapshot({ id: 1, name: 'web', targets: [{ address: `127.0.0.1:${web.port}`, weight: 1 }] }),
        buildGroupSnapshot({ id: 2, name: 'alpha', targets: [{ address: `127.0.0.1:${alphaPort}`, weight: 1 }] }),
        buildGroupSnapshot({ id: 3, name: 'beta', targets: [{ address: `127.0.0.1:${betaPort}`, weight: 1 }] }),
      ],
      streams: [
        stream({ id: 1, name: 'alpha', listen_port: httpsPort, target_group_id: 2, tls_sni: ['alpha.example.test'] }),
        stream({ id: 2, name: 'beta', listen_port: httpsPort, target_group_id: 3, tls_sni: ['beta.example.test'] }),
        stream({ id: 3, name: 'wild', listen_port: sniPort, target_group_id: 3, tls_sni: ['*.wild.example.test'] }),
        stream({ id: 4, name: 'lan', listen_port: httpsPort, target_group_id: 2, tls_sni: ['lan.example.test'], lan_only: true }),
      ],
    }),
  )
  expect(warnings).toEqual([])
  const res = await caddy.load(config)
  expect(res.status, res.body).toBe(200)
})

afterAll(async () => {
  await caddy?.stop()
  await ns?.destroy()
  await web?.stop()
  for (const s of tlsUpstreams) s.close()
})

/**
 * A TLS handshake from the namespace client with this server name (openssl s_client,
 * stdin empty, reading until the far end closes): the certificate it was shown and what came after.
 */
async function tlsFromNamespace(port: number, serverName: string) {
  const out = await ns.exec('sh', ['-c', `openssl s_client -connect ${HOST_ADDR}:${port} -servername ${serverName} -ign_eof </dev/null`])
  const subject = /subject=.*CN\s*=\s*([^\s,/]+)/.exec(out.stdout)?.[1] ?? null
  const greeting = /upstream \w+ saw \S+/.exec(out.stdout)?.[0] ?? null
  return { subject, greeting, out }
}

describe('two TLS upstreams behind the HTTPS port, chosen by SNI, beside an HTTPS web host', () => {
  it('alpha.example.test reaches the alpha upstream, which presents its own certificate', async () => {
    const r = await tlsFromNamespace(httpsPort, 'alpha.example.test')
    expect(r.subject, r.out.stdout + r.out.stderr).toBe('alpha.example.test')
    expect(r.greeting).toBe('upstream alpha saw alpha.example.test')
  })

  it('beta.example.test reaches the beta upstream on the same port', async () => {
    const r = await tlsFromNamespace(httpsPort, 'beta.example.test')
    expect(r.subject, r.out.stdout + r.out.stderr).toBe('beta.example.test')
    expect(r.greeting).toBe('upstream beta saw beta.example.test')
  })

  it('the web host on the same port still answers 200 through the HTTP app, with its own certificate', async () => {
    const before = web.requests.length
    const res = await ns.curl(`https://www.example.test:${httpsPort}/through-http-app`, [
      '-k',
      '-v',
      '--resolve',
      `www.example.test:${httpsPort}:${HOST_ADDR}`,
    ])
    expect(res.status, res.stderr).toBe(200)
    expect(web.requests.length).toBe(before + 1)
    expect(web.requests.at(-1)!.url).toBe('/through-http-app')
    expect(res.stderr).toMatch(/subject: CN\s*=\s*www\.example\.test/)
  })
})

/** The layer-4 log's lines (connection rows and refusals) of one stream. */
function layer4Lines(streamId: number): Array<Record<string, unknown>> {
  const file = join(logDir, 'layer4.log')
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.stream_id === streamId)
}

describe("a stream's guards and connection log apply on its SNI route", () => {
  it('a LAN-only SNI stream closes the public namespace client before the upstream, and logs why', async () => {
    const r = await tlsFromNamespace(httpsPort, 'lan.example.test')
    expect(r.greeting).toBeNull()
    expect(r.subject).toBeNull()
    await waitFor(async () => layer4Lines(4).some((l) => l.reason === 'lan_only'), { timeoutMs: 10_000, what: 'the lan_only refusal line' })
  })

  it('the same name from loopback (a LAN source) reaches its upstream', async () => {
    const out = await new Promise<string>((resolve) => {
      execFile(
        'sh',
        ['-c', `openssl s_client -connect 127.0.0.1:${httpsPort} -servername lan.example.test -ign_eof </dev/null`],
        (_e, stdout) => resolve(stdout),
      )
    })
    expect(out).toContain('upstream alpha saw lan.example.test')
  })

  it('a connection through an SNI route is a connection row with the bytes each way', async () => {
    expect((await tlsFromNamespace(httpsPort, 'alpha.example.test')).greeting).toBe('upstream alpha saw alpha.example.test')
    await waitFor(async () => layer4Lines(1).some((l) => Number(l.bytes_in) > 0 && Number(l.bytes_out) > 0), {
      timeoutMs: 10_000,
      what: 'the connection row of the alpha stream',
    })
    expect(String(layer4Lines(1).at(-1)!.remote)).toMatch(/^198\.51\.100\.10:/)
  })
})

describe('a wildcard SNI stream on a port of its own', () => {
  it('a name under the wildcard reaches the upstream', async () => {
    const r = await tlsFromNamespace(sniPort, 'db.wild.example.test')
    expect(r.greeting, r.out.stdout + r.out.stderr).toBe('upstream beta saw db.wild.example.test')
  })

  it('a name no stream claims is closed without reaching an upstream', async () => {
    const r = await tlsFromNamespace(sniPort, 'alpha.example.test')
    expect(r.subject).toBeNull()
    expect(r.greeting).toBeNull()
  })
})
