import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../support/build'
import { eventually, httpRequest, presentedCertificate } from '../support/http'
import { startTestUpstream, type TestUpstream } from '../support/upstream'

// npm run stack (scripts/stack.mjs), started the way an operator does (`npm run stack`):
// create a host through its API and reach it through its proxy; the geolocation
// database it serves on loopback loads and a country ban of one of its countries
// expands; a host with Automatic TLS gets its certificate from the local Pebble;
// a SIGTERM to npm stops every process the stack started, the script included.

interface Ready {
  panel: string
  login: { email: string; password: string }
  proxy: { http: string; https: string; admin: string }
  lapi: string
  geoip: { country_url: string; asn_url: string; countries: string[] }
  acme: { directory: string; issuing_root_pem_file: string } | null
  data_dir: string
  proxy_log_dir: string
  pids: Record<string, number>
}

let stack: ChildProcess | undefined
let upstream: TestUpstream | undefined
let output = ''

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

afterAll(async () => {
  if (stack && stack.exitCode === null && stack.signalCode === null) stack.kill('SIGKILL')
  await upstream?.stop()
})

async function startStack(): Promise<Ready> {
  // `npm run` runs the script through a shell; without `exec` in package.json that shell took npm's SIGTERM and left the stack running.
  stack = spawn('npm', ['run', '--silent', 'stack', '--', '--no-demo'], {
    cwd: REPO_ROOT,
    env: { ...process.env, SKIP_PANEL_BUILD: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  stack.stdout!.on('data', (d) => {
    output += d
  })
  stack.stderr!.on('data', (d) => {
    output += d
  })
  const deadline = Date.now() + 90_000
  for (;;) {
    const m = /^STACK_READY (.+)$/m.exec(output)
    if (m) return JSON.parse(m[1]!) as Ready
    if (stack.exitCode !== null) throw new Error(`npm run stack exited with ${stack.exitCode}:\n${output}`)
    if (Date.now() > deadline) throw new Error(`npm run stack was not ready in 90 s:\n${output}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

const parentOf = (pid: number) =>
  Number(
    readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ')[1],
  )

describe('npm run stack', () => {
  it('serves a host created through the API, a country ban from its own database, a certificate from its own CA; SIGTERM to npm stops everything', async () => {
    const ready = await startStack()
    expect(output).toContain(ready.login.email)
    expect(Object.keys(ready.pids).sort()).toEqual(['caddy', 'challtestsrv', 'crowdsec', 'panel', 'pebble', 'stack'])
    for (const pid of Object.values(ready.pids)) expect(alive(pid)).toBe(true)
    // The script itself is npm's child: no shell in between to swallow a signal.
    expect(parentOf(ready.pids.stack!)).toBe(stack!.pid)

    const login = await fetch(`${ready.panel}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ready.login),
    })
    expect(login.status).toBe(200)
    const cookie = /^(panel_session=[^;]*)/.exec(login.headers.getSetCookie().join('\n'))![1]!
    const post = (path: string, body: unknown) =>
      fetch(`${ready.panel}${path}`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, json: (await r.json()) as any }))

    upstream = await startTestUpstream()
    const group = await post('/api/target-groups', { name: 'stack-test', targets: [{ address: `127.0.0.1:${upstream.port}` }] })
    expect(group.status).toBe(201)
    const host = await post('/api/hosts', { domain: 'stack.example.test', target_group_id: group.json.id, tls_mode: 'none' })
    expect(host.status).toBe(201)
    expect(host.json.reconcile.status).toBe('applied')

    const proxyPort = Number(new URL(ready.proxy.http).port)
    const served = await httpRequest({ port: proxyPort, host: 'stack.example.test', path: '/hello' })
    expect(served.status).toBe(200)
    expect(JSON.parse(served.body)).toMatchObject({ upstream: upstream.port, url: '/hello' })
    // The engine's local API is up and reachable as printed.
    expect((await fetch(`${ready.lapi}/health`, { headers: { 'user-agent': 'panel-test/1.0' } })).status).toBe(200)

    // Geolocation: the panel's URLs point at the stack's own files, which it downloaded at its start.
    const get = (path: string) => fetch(`${ready.panel}${path}`, { headers: { cookie } }).then(async (r) => (await r.json()) as any)
    const settings = await get('/api/settings')
    expect(settings).toMatchObject({ 'geoip.country_url': ready.geoip.country_url, 'geoip.asn_url': ready.geoip.asn_url })
    expect(ready.geoip.countries).toContain('DE')
    await eventually(
      () => get('/api/geoip/status'),
      (st) => st.country?.loaded && st.asn?.loaded,
      30_000,
      200,
    )
    expect(await get('/api/geoip/lookup?ip=192.0.2.10')).toMatchObject({ country: 'DE', as_number: 64496 })
    const ban = await post('/api/security/countries/DE/expand', { duration: '1h', reason: 'stack test' })
    expect(ban.status).toBe(202)
    const job = await eventually(
      () => get(`/api/security/jobs/${ban.json.id}`),
      (j) => ['completed', 'failed'].includes(j.state),
      60_000,
      200,
    )
    expect(job).toMatchObject({ state: 'completed', cidr_committed: 2, error_message: '' })
    const [country] = await get('/api/security/countries')
    expect(country).toMatchObject({ country_code: 'DE', cidrs: ['192.0.2.0/24', '2001:db8:de::/48'], state: 'active' })

    // ACME: the default directory is the stack's Pebble, whose root the proxy trusts; a host with
    // Automatic TLS and no CA of its own gets its certificate there, on loopback.
    expect(ready.acme).not.toBeNull()
    expect(settings['acme.ca_url']).toBe(ready.acme!.directory)
    const tlsHost = await post('/api/hosts', { domain: 'acme.stack.example.test', target_group_id: group.json.id, tls_mode: 'auto' })
    expect(tlsHost.status).toBe(201)
    const issuingRoot = readFileSync(ready.acme!.issuing_root_pem_file, 'utf8')
    const httpsPort = Number(new URL(ready.proxy.https).port)
    const cert = await eventually(
      () => presentedCertificate(httpsPort, 'acme.stack.example.test', issuingRoot),
      (c) => !!c?.authorized,
      60_000,
      300,
    )
    expect(cert).toMatchObject({ subject: 'acme.stack.example.test', authorized: true })
    expect(cert!.issuer).toMatch(/Pebble/)

    // 'close': every holder of npm's output pipes is gone, the script (which inherited them) included.
    const exited = new Promise<void>((r) => stack!.once('close', () => r()))
    // To npm, as a service manager or `kill %1` would: npm forwards it to its child, the script.
    stack!.kill('SIGTERM')
    await exited
    expect(output).toContain('[stack] stopped')
    for (const [name, pid] of Object.entries(ready.pids)) expect(alive(pid), `${name} (pid ${pid}) still runs`).toBe(false)
    expect(existsSync(ready.data_dir)).toBe(false)
    expect(existsSync(ready.proxy_log_dir)).toBe(false)
  })
})
