import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../support/build'
import { httpRequest } from '../support/http'
import { startTestUpstream, type TestUpstream } from '../support/upstream'

// npm run stack (scripts/stack.mjs): start it, create a host through its API,
// reach the host through its proxy, stop it with SIGTERM, and check that no
// process it started is left.

interface Ready {
  panel: string
  login: { email: string; password: string }
  proxy: { http: string; admin: string }
  lapi: string
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
  stack = spawn(process.execPath, [join(REPO_ROOT, 'scripts/stack.mjs'), '--no-demo'], {
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

describe('npm run stack', () => {
  it('serves a host created through the API, then stops everything on SIGTERM', async () => {
    const ready = await startStack()
    expect(output).toContain(ready.login.email)
    expect(Object.keys(ready.pids).sort()).toEqual(['caddy', 'crowdsec', 'panel'])
    for (const pid of Object.values(ready.pids)) expect(alive(pid)).toBe(true)

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

    const exited = new Promise<number | null>((r) => stack!.once('exit', (code) => r(code)))
    stack!.kill('SIGTERM')
    expect(await exited).toBe(0)
    expect(output).toContain('[stack] stopped')
    for (const [name, pid] of Object.entries(ready.pids)) expect(alive(pid), `${name} (pid ${pid}) still runs`).toBe(false)
    expect(existsSync(ready.data_dir)).toBe(false)
    expect(existsSync(ready.proxy_log_dir)).toBe(false)
  })
})
