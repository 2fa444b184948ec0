import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { createClient, type Client } from '@libsql/client'
import { PANEL_NODE_FLAGS } from '../../scripts/node-flags.mjs'
import { REPO_ROOT } from './build'
import { freePort } from './ports'
import { makeTempDir, manageChild } from './processes'

// Starts the BUILT panel (.output/server/index.mjs) on a free loopback port with
// its own data folder, and talks to it over HTTP like any client would.

export { REPO_ROOT }
export const ADMIN = { email: 'admin@example.test', password: 'admin-password-123' }
export const TEST_MASTER_KEY = 'test-master-key-0123456789-abcdefghijklmnop'

// Every response of the suite and every panel's output are scanned for the
// secret values tests use: one appearing anywhere fails the test at once.
const _secrets = new Set<string>([ADMIN.password, TEST_MASTER_KEY])
export function registerTestSecret(...values: string[]): void {
  for (const v of values) _secrets.add(v)
}
function _assertNoSecret(text: string, where: string): void {
  for (const s of _secrets) if (text.includes(s)) throw new Error(`${where} contains the secret value ${s.slice(0, 4)}…`)
}

export interface PanelResponse<T = any> {
  status: number
  headers: Headers
  text: string
  json: T
}

/** What a response observer sees: every answer of `PanelHandle.request`. */
export interface ObservedResponse {
  method: string
  path: string
  status: number
  headers: Headers
  text: string
  json: unknown
}
const _observers: Array<(r: ObservedResponse) => void | Promise<void>> = []
/**
 * Registers a check run on every response of every panel the harness started
 * (the OpenAPI contract check in tests/support/openapi-contract.ts); a throw
 * fails the request, hence the test. Returns the unregister function.
 */
export function observePanelResponses(observer: (r: ObservedResponse) => void | Promise<void>): () => void {
  _observers.push(observer)
  return () => {
    const i = _observers.indexOf(observer)
    if (i >= 0) _observers.splice(i, 1)
  }
}
export interface RequestOptions {
  method?: string
  body?: unknown
  rawBody?: string | Buffer
  form?: FormData
  cookie?: string
  headers?: Record<string, string>
}

export interface PanelHandle {
  url: string
  port: number
  dataDir: string
  pid: number
  output(): string
  request<T = any>(path: string, opts?: RequestOptions): Promise<PanelResponse<T>>
  /** Logs in and returns the `panel_session=<token>` cookie pair (`__Host-panel_session` in strict session mode over HTTPS). */
  login(email?: string, password?: string): Promise<string>
  db(): Client
  stop(): Promise<void>
  kill(signal: NodeJS.Signals): Promise<void>
}

export function sessionCookieOf(res: { headers: Headers }): string | undefined {
  for (const c of res.headers.getSetCookie()) {
    // Strict session mode over HTTPS names it __Host-panel_session (docs/auth.md).
    const m = /^((?:__Host-)?panel_session=[^;]+)/.exec(c)
    if (m) return m[1]
  }
  return undefined
}

export async function startPanel(
  // port: when the caller must know it before the start (a PANEL_PUBLIC_URL naming it).
  // outputClosed: the reader of the panel's standard output and error is gone from the start (a log collector that died).
  opts: { env?: Record<string, string>; dataDir?: string; setupAdmin?: boolean; port?: number; outputClosed?: boolean } = {},
): Promise<PanelHandle> {
  const entry = join(REPO_ROOT, '.output/server/index.mjs')
  if (!existsSync(entry)) throw new Error('the panel is not built: run npm run build (scripts/test.sh does)')
  const port = opts.port ?? (await freePort())
  const dataDir = opts.dataDir ?? makeTempDir('panel-test-')
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    NODE_ENV: 'production',
    PORT: String(port),
    HOST: '127.0.0.1',
    PANEL_DATA_DIR: dataDir,
    PANEL_MASTER_KEY: TEST_MASTER_KEY,
    PROXY_MODULES: 'none',
    PROXY_ADMIN_URL: 'http://127.0.0.1:1', // nothing listens: tests that need a proxy pass their own
    // No outbound downloads from tests: geolocation tests serve their own files.
    GEOIP_COUNTRY_URL: 'http://127.0.0.1:1/country.mmdb',
    GEOIP_ASN_URL: 'http://127.0.0.1:1/asn.mmdb',
    LAPI_URL: 'http://127.0.0.1:1',
    // No DNS vendor asked on a host save: tests of the automatic check turn it on (with BIND).
    PANEL_DNS_AUTO_CHECK: 'off',
    ...(opts.setupAdmin === false ? {} : { PANEL_ADMIN_EMAIL: ADMIN.email, PANEL_ADMIN_PASSWORD: ADMIN.password }),
    ...opts.env,
  }
  const child: ChildProcess = spawn(process.execPath, [...PANEL_NODE_FLAGS, entry], {
    cwd: dataDir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  manageChild(child)
  let output = ''
  child.stdout!.on('data', (d) => {
    output += d
  })
  child.stderr!.on('data', (d) => {
    output += d
  })
  if (opts.outputClosed) for (const stream of [child.stdout!, child.stderr!]) stream.destroy()
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)))
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`panel exited with ${child.exitCode}:\n${output}`)
    if (output.includes('Listening on') || opts.outputClosed) {
      // Boot work (migrations, admin bootstrap) finishes before the first answer.
      // Bounded: a panel that accepts connections but never answers must fail the start, not hang it.
      const ok = await fetch(`${url}/api/setup`, { signal: AbortSignal.timeout(2000) }).then(
        (r) => r.status < 500,
        () => false,
      )
      if (ok) break
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`panel did not start in 60 s:\n${output}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  let dbClient: Client | undefined
  const handle: PanelHandle = {
    url,
    port,
    dataDir,
    pid: child.pid!,
    output: () => output,
    async request(path, o = {}) {
      const headers: Record<string, string> = { ...o.headers }
      if (o.cookie) headers.cookie = o.cookie
      let body: string | Uint8Array | FormData | undefined = o.rawBody
      if (o.body !== undefined) {
        body = JSON.stringify(o.body)
        headers['content-type'] ??= 'application/json'
      }
      if (o.form) {
        body = o.form // multipart: fetch sets the boundary
        // What the web UI sends with an upload (ui/src/api.ts); a test of its absence sends its own headers through fetch.
        headers['x-panel-request'] ??= '1'
      }
      const res = await fetch(url + path, { method: o.method ?? 'GET', headers, body: body as BodyInit | undefined, redirect: 'manual' })
      const text = await res.text()
      _assertNoSecret(text, `the response to ${o.method ?? 'GET'} ${path}`)
      for (const [k, v] of res.headers) if (k !== 'set-cookie') _assertNoSecret(v, `response header ${k} of ${path}`)
      let json: any
      try {
        json = text ? JSON.parse(text) : undefined
      } catch {
        json = undefined
      }
      // An unexpected server error is logged by the panel, not answered: show that log with the failure.
      if (res.status === 500 && json?.error === 'internal error')
        throw new Error(`${o.method ?? 'GET'} ${path} answered 500; the panel logged:\n${output.slice(-4000)}`)
      for (const observe of _observers)
        await observe({ method: o.method ?? 'GET', path, status: res.status, headers: res.headers, text, json })
      return { status: res.status, headers: res.headers, text, json }
    },
    async login(email = ADMIN.email, password = ADMIN.password) {
      const res = await handle.request('/api/auth/login', { method: 'POST', body: { email, password } })
      const cookie = sessionCookieOf(res)
      if (res.status !== 200 || !cookie) throw new Error(`login as ${email} failed: ${res.status} ${res.text}`)
      return cookie
    },
    db() {
      // A busy timeout like the panel's own: the panel may hold the write lock when a test inserts.
      dbClient ??= createClient({ url: `file:${join(dataDir, 'panel.db')}`, timeout: 5000 })
      return dbClient
    },
    async stop() {
      dbClient?.close()
      dbClient = undefined
      if (child.exitCode === null) {
        child.kill('SIGTERM')
        await exited
      }
      _assertNoSecret(output, 'the panel output')
    },
    async kill(signal) {
      dbClient?.close()
      dbClient = undefined
      if (child.exitCode === null) {
        child.kill(signal)
        await exited
      }
    },
  }
  return handle
}
