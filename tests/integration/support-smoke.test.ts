import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { connect, type PeerCertificate } from 'node:tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createPublicClientNamespace,
  freePorts,
  LAPI_USER_AGENT,
  startCaddy,
  startCrowdsec,
  startPebble,
  startTestUpstream,
  type CaddyHandle,
  type CrowdsecHandle,
  type PebbleHandle,
  type PublicClientNamespace,
  type TestUpstream,
} from '../support/index'
import { httpRequest } from '../support/http'

// The harness itself: every real component starts on free loopback ports in its own
// temp folder, does the one thing the other tests rely on, and stops by its PID.

const timings: Record<string, number> = {}
afterAll(() => {
  console.log(`[support-smoke] start times (ms): ${JSON.stringify(timings)}`)
})

/** Runs every cleanup step even when an earlier one throws; rethrows the first error. */
async function cleanup(...steps: Array<(() => Promise<unknown>) | undefined>): Promise<void> {
  let first: unknown
  for (const step of steps) {
    try {
      await step?.()
    } catch (err) {
      first ??= err
    }
  }
  if (first) throw first
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function until<T>(probe: () => Promise<T>, ok: (v: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    let v: T | undefined
    try {
      v = await probe()
    } catch {
      v = undefined
    }
    if (v !== undefined && ok(v)) return v
    if (Date.now() > deadline) return v as T
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** A small Caddy config: one HTTP server on `listen` that proxies everything to `dial`. */
function proxyConfig(
  caddy: CaddyHandle,
  o: { httpPort: number; httpsPort: number; listen: string[]; dial: string; lanGate?: boolean; accessLog?: string },
) {
  const lanGate = {
    match: [{ not: [{ remote_ip: { ranges: ['127.0.0.0/8', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '::1/128', 'fc00::/7'] } }] }],
    handle: [{ handler: 'static_response', status_code: 403, body: 'forbidden\n' }],
    terminal: true,
  }
  return {
    admin: { listen: caddy.adminListen, config: { persist: false } },
    storage: { module: 'file_system', root: caddy.storageDir },
    ...(o.accessLog
      ? {
          logging: {
            logs: {
              default: { exclude: ['http.log.access.access'] },
              access: {
                writer: { output: 'file', filename: o.accessLog },
                encoder: { format: 'json' },
                include: ['http.log.access.access'],
              },
            },
          },
        }
      : {}),
    apps: {
      http: {
        http_port: o.httpPort,
        https_port: o.httpsPort,
        servers: {
          web: {
            listen: o.listen,
            ...(o.accessLog ? { logs: { default_logger_name: 'access' } } : {}),
            routes: [...(o.lanGate ? [lanGate] : []), { handle: [{ handler: 'reverse_proxy', upstreams: [{ dial: o.dial }] }] }],
          },
        },
      },
    },
  }
}

describe('Caddy with a test upstream', () => {
  let caddy: CaddyHandle | undefined
  let upstream: TestUpstream | undefined
  let httpPort: number, httpsPort: number
  let config: object

  beforeAll(async () => {
    upstream = await startTestUpstream()
    ;[httpPort, httpsPort] = await freePorts(2)
    caddy = await startCaddy()
    timings.caddy = caddy.startMs
    config = proxyConfig(caddy, { httpPort, httpsPort, listen: [`127.0.0.1:${httpPort}`], dial: `127.0.0.1:${upstream.port}` })
  })
  afterAll(() =>
    cleanup(
      () => caddy!.stop(),
      () => upstream!.stop(),
    ),
  )

  const get = (path: string) => httpRequest({ port: httpPort, host: 'app.example.test', path })

  it('loads a proxy config and forwards requests to the upstream', async () => {
    const t0 = performance.now()
    const loaded = await caddy!.load(config)
    timings.caddyLoad = Math.round(performance.now() - t0)
    expect(loaded).toMatchObject({ status: 200, body: '' })
    const res = await get('/hello?x=1')
    expect(res.status).toBe(200)
    const body = JSON.parse(res.body)
    expect(body).toMatchObject({ upstream: upstream!.port, url: '/hello?x=1' })
    expect(body.headers['x-forwarded-for']).toBe('127.0.0.1')
    const seen = upstream!.requests.at(-1)!
    expect(seen).toMatchObject({ method: 'GET', url: '/hello?x=1', remoteAddress: '127.0.0.1' })
    expect(seen.headers.host).toBe('app.example.test')
    const active = (await caddy!.getConfig()) as any
    expect(active.apps.http.servers.web.listen).toEqual([`127.0.0.1:${httpPort}`])
    expect(active.admin.listen).toBe(caddy!.adminListen)
  })

  it('answers 400 to an invalid config and keeps the old one (fresh admin connections across loads)', async () => {
    const bad = { admin: { listen: caddy!.adminListen }, apps: { http: { bogus: true } } }
    const res = await caddy!.load(bad)
    expect(res.status).toBe(400)
    expect(JSON.parse(res.body).error).toContain('unknown field "bogus"')
    expect((await get('/still')).status).toBe(200)
  })

  it('gives 502 while the upstream is down and 200 once it is back', async () => {
    await upstream!.setDown(true)
    expect((await get('/down')).status).toBe(502)
    await upstream!.setDown(false)
    expect((await get('/up')).status).toBe(200)
  })

  it('restarts with only the bootstrap config on the same admin port', async () => {
    const oldPid = caddy!.pid
    await caddy!.restart()
    expect(caddy!.pid).not.toBe(oldPid)
    expect(pidAlive(oldPid)).toBe(false)
    expect(await caddy!.getConfig()).toEqual({ admin: { listen: caddy!.adminListen, config: { persist: false } } })
    await expect(get('/after-restart')).rejects.toThrow(/ECONNREFUSED/)
    expect((await caddy!.load(config)).status).toBe(200)
    expect((await get('/reloaded')).status).toBe(200)
  })

  it('stops by its PID', async () => {
    const pid = caddy!.pid
    await caddy!.stop()
    expect(pidAlive(pid)).toBe(false)
    expect(readFileSync(caddy!.logFile, 'utf8')).toContain('exiting; byeee!!')
  })
})

/** The certificate Caddy presents for `servername`, checked against `ca`. */
function tlsProbe(
  port: number,
  servername: string,
  ca: string,
): Promise<{ authorized: boolean; error: string | null; cert: PeerCertificate }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername, ca, rejectUnauthorized: false, timeout: 5_000 }, () => {
      const r = {
        authorized: socket.authorized,
        error: socket.authorizationError ? String(socket.authorizationError) : null,
        cert: socket.getPeerCertificate(),
      }
      socket.end()
      resolve(r)
    })
    socket.on('error', reject)
    socket.on('timeout', () => socket.destroy(new Error('TLS handshake timeout')))
  })
}

describe('Caddy obtains a certificate from Pebble (http-01)', () => {
  let caddy: CaddyHandle | undefined
  let pebble: PebbleHandle | undefined
  let httpPort: number, httpsPort: number
  const NAME = 'web1.example.test'

  beforeAll(async () => {
    ;[httpPort, httpsPort] = await freePorts(2)
    caddy = await startCaddy()
    pebble = await startPebble({ httpPort, tlsPort: httpsPort })
    timings.pebble = pebble.startMs
  })
  afterAll(() =>
    cleanup(
      () => caddy!.stop(),
      () => pebble!.stop(),
    ),
  )

  it(`issues ${NAME} and serves it over TLS`, async () => {
    const root = await pebble!.issuingRootPem()
    expect(root).toMatch(/^-----BEGIN CERTIFICATE-----/)
    const t0 = performance.now()
    const res = await caddy!.load({
      admin: { listen: caddy!.adminListen, config: { persist: false } },
      storage: { module: 'file_system', root: caddy!.storageDir },
      apps: {
        tls: {
          automation: {
            policies: [
              {
                subjects: [NAME],
                issuers: [
                  {
                    module: 'acme',
                    ca: pebble!.directoryUrl,
                    email: 'ops@example.test',
                    trusted_roots_pem_files: [pebble!.caPemFile],
                    challenges: { http: {}, 'tls-alpn': { disabled: true } },
                  },
                ],
              },
            ],
          },
        },
        http: {
          http_port: httpPort,
          https_port: httpsPort,
          servers: {
            web: { listen: [`127.0.0.1:${httpPort}`], routes: [{ handle: [{ handler: 'static_response', body: 'plain\n' }] }] },
            tls: {
              listen: [`127.0.0.1:${httpsPort}`],
              automatic_https: { disable_redirects: true },
              routes: [{ match: [{ host: [NAME] }], handle: [{ handler: 'static_response', body: `hello ${NAME}\n` }] }],
            },
          },
        },
      },
    })
    expect(res.status).toBe(200)
    const probe = await until(
      () => tlsProbe(httpsPort, NAME, root),
      (p) => p.authorized,
      20_000,
    )
    timings.acmeIssuance = Math.round(performance.now() - t0)
    expect(probe, `no Pebble certificate; caddy log:\n${readFileSync(caddy!.logFile, 'utf8').slice(-3000)}`).toBeDefined()
    expect(probe.error).toBeNull()
    expect(probe.authorized).toBe(true)
    expect(probe.cert.subject.CN).toBe(NAME)
    expect(String(probe.cert.issuer.CN)).toContain('Pebble')
    expect(readFileSync(caddy!.logFile, 'utf8')).toContain('"challenge":"http-01"')
    // The same certificate is stored under the storage root Caddy was given.
    const stored = join(caddy!.storageDir, 'certificates', `127.0.0.1-${new URL(pebble!.directoryUrl).port}-dir`, NAME, `${NAME}.crt`)
    expect(readFileSync(stored, 'utf8')).toContain('BEGIN CERTIFICATE')
  })
})

describe('CrowdSec local API', () => {
  let cs: CrowdsecHandle | undefined
  beforeAll(async () => {
    cs = await startCrowdsec()
    timings.crowdsec = cs.startMs
  })
  afterAll(() => cleanup(() => cs!.stop()))

  const UA = { 'user-agent': LAPI_USER_AGENT } // the LAPI refuses a User-Agent not shaped name/version

  async function login(): Promise<string> {
    const res = await fetch(`${cs!.url}/v1/watchers/login`, {
      method: 'POST',
      headers: { ...UA, 'content-type': 'application/json' },
      body: JSON.stringify({ machine_id: cs!.machineId, password: cs!.machinePassword }),
    })
    expect(res.status).toBe(200)
    return (await res.json()).token as string
  }

  it('registered the machine and the bouncer (cscli)', async () => {
    const machines = JSON.parse(await cs!.cscli(['machines', 'list', '-o', 'json'])) as Array<{ machineId: string }>
    expect(machines.map((m) => m.machineId)).toContain('panel')
    const bouncers = JSON.parse(await cs!.cscli(['bouncers', 'list', '-o', 'json'])) as Array<{ name: string }>
    expect(bouncers.map((b) => b.name)).toEqual(['panel-bouncer'])
  })

  it('takes an alert with a Range decision from the machine and serves it to the bouncer', async () => {
    const token = await login()
    const now = new Date().toISOString()
    const alert = [
      {
        scenario: 'panel/smoke',
        scenario_hash: '',
        scenario_version: '',
        message: 'smoke',
        events_count: 1,
        start_at: now,
        stop_at: now,
        capacity: 0,
        leakspeed: '0',
        simulated: false,
        events: [],
        source: { scope: 'Range', value: '198.51.100.0/28' },
        decisions: [
          { origin: 'panel-country-ZZ', type: 'ban', scope: 'Range', value: '198.51.100.0/28', duration: '1h', scenario: 'panel/smoke' },
        ],
      },
    ]
    const posted = await fetch(`${cs!.url}/v1/alerts`, {
      method: 'POST',
      headers: { ...UA, authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(alert),
    })
    expect(posted.status).toBe(201)
    const read = await fetch(`${cs!.url}/v1/decisions?ip=198.51.100.5`, { headers: { ...UA, 'x-api-key': cs!.bouncerKey } })
    expect(read.status).toBe(200)
    const decisions = await read.json()
    expect(decisions).toHaveLength(1)
    expect(decisions[0]).toMatchObject({ origin: 'panel-country-ZZ', scope: 'Range', value: '198.51.100.0/28', type: 'ban' })
    const outside = await fetch(`${cs!.url}/v1/decisions?ip=198.51.100.50`, { headers: { ...UA, 'x-api-key': cs!.bouncerKey } })
    expect(await outside.json()).toBeNull()
  })

  it('keeps machine tokens valid across a restart (fixed JWT secret)', async () => {
    const token = await login()
    const oldPid = cs!.pid
    await cs!.restart()
    expect(cs!.pid).not.toBe(oldPid)
    expect(pidAlive(oldPid)).toBe(false)
    const res = await fetch(`${cs!.url}/v1/alerts?limit=1`, { headers: { ...UA, authorization: `Bearer ${token}` } })
    expect(res.status).toBe(200)
  })
})

describe('a public client in a network namespace meets the LAN gate', () => {
  let ns: PublicClientNamespace | undefined
  let caddy: CaddyHandle | undefined
  let upstream: TestUpstream | undefined
  let httpPort: number
  let accessLog: string

  beforeAll(async () => {
    const t0 = performance.now()
    ns = await createPublicClientNamespace({ hostAddress: '198.51.100.1', clientAddresses: ['198.51.100.10', '198.51.100.11'] })
    timings.netns = Math.round(performance.now() - t0)
    upstream = await startTestUpstream()
    caddy = await startCaddy()
    let httpsPort: number
    ;[httpPort, httpsPort] = await freePorts(2)
    accessLog = join(caddy.workDir, 'access.log')
    const res = await caddy.load(
      proxyConfig(caddy, {
        httpPort,
        httpsPort,
        listen: [`127.0.0.1:${httpPort}`, `198.51.100.1:${httpPort}`],
        dial: `127.0.0.1:${upstream.port}`,
        lanGate: true,
        accessLog,
      }),
    )
    if (res.status !== 200) throw new Error(`caddy /load: ${res.status} ${res.body}`)
  })
  afterAll(() =>
    cleanup(
      () => caddy!.stop(),
      () => upstream!.stop(),
      () => ns!.destroy(),
    ),
  )

  it('answers 403 to 198.51.100.10 and .11, 200 to loopback', async () => {
    const before = upstream!.requests.length
    const fromNs = await ns!.curl(`http://198.51.100.1:${httpPort}/private`, ['-H', 'Host: lan.example.test'])
    expect(fromNs).toMatchObject({ status: 403, body: 'forbidden\n' })
    const fromSecond = await ns!.curl(`http://198.51.100.1:${httpPort}/private`, ['-H', 'Host: lan.example.test'], {
      fromAddress: '198.51.100.11',
    })
    expect(fromSecond.status).toBe(403)
    expect(upstream!.requests.length).toBe(before) // nothing reached the upstream
    const local = await httpRequest({ port: httpPort, host: 'lan.example.test', path: '/private' })
    expect(local.status).toBe(200)
    expect(JSON.parse(local.body)).toMatchObject({ upstream: upstream!.port, url: '/private' })
    // Caddy saw the namespace addresses as the clients.
    const seen = await until(
      async () =>
        readFileSync(accessLog, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l)),
      (lines) => lines.length >= 3,
      5_000,
    )
    expect(seen.map((l: any) => [l.request.remote_ip, l.status])).toEqual([
      ['198.51.100.10', 403],
      ['198.51.100.11', 403],
      ['127.0.0.1', 200],
    ])
  })

  it('cannot reach loopback-only listeners from inside the namespace', async () => {
    const r = await ns!.curl(`http://127.0.0.1:${httpPort}/`, [], { timeoutSec: 3 })
    expect(r.status).toBe(0)
  })

  it('is gone after destroy', async () => {
    const name = ns!.name
    await ns!.destroy()
    const { execFileSync } = await import('node:child_process')
    expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toContain(name)
    expect(execFileSync('ip', ['-4', 'route'], { encoding: 'utf8' })).not.toContain('198.51.100.')
  })
})
