import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from '../tests/support/ports'
import { makeTempDir, startProcess, waitFor, type ManagedProcess } from '../tests/support/processes'
import { cpuMsOfTree } from './rss'

// The references of the streams benchmark (bench/streams.bench.ts, docs/performance.md):
// other TCP proxies in front of the same upstream, measured in the same run as the stream
// and the direct connection. nginx's stream module and HAProxy are what the peers' users
// run for raw TCP (Debian's packages; a bench reference only, nothing installs them for
// the tests). The splice relay (bench/splice-relay) is the floor: the least any user-space
// proxy does per byte here. Each is started by the bench on loopback and stopped by it.

const NGINX = '/usr/sbin/nginx'
const NGINX_STREAM_MODULE = '/usr/lib/nginx/modules/ngx_stream_module.so'
const HAPROXY = '/usr/sbin/haproxy'
const SPLICE_RELAY_SOURCE = fileURLToPath(new URL('./splice-relay', import.meta.url))

export interface StreamReference {
  name: string
  port: number
  /** CPU time (ms) of the proxy's processes so far. */
  cpuMs(): number
  stop(): Promise<void>
}

async function _started(name: string, port: number, proc: ManagedProcess, readyWhen: () => boolean): Promise<StreamReference> {
  await waitFor(async () => readyWhen(), { timeoutMs: 30_000, what: name, process: proc })
  return { name, port, cpuMs: () => cpuMsOfTree(proc.pid), stop: () => proc.stop() }
}

/** A port answering a TCP connection (the reference is listening). */
function _listening(port: number): boolean {
  try {
    return readFileSync('/proc/net/tcp', 'utf8').includes(`:${port.toString(16).toUpperCase().padStart(4, '0')} 00000000:0000 0A`)
  } catch {
    return false
  }
}

async function _startNginxStream(upstreamPort: number): Promise<StreamReference> {
  const dir = makeTempDir('bench-streams-nginx-')
  const port = await freePort()
  // One worker: one connection is served by one worker however many there are.
  writeFileSync(
    join(dir, 'nginx.conf'),
    `load_module ${NGINX_STREAM_MODULE};
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 64; }
stream {
  server {
    listen 127.0.0.1:${port};
    proxy_pass 127.0.0.1:${upstreamPort};
  }
}
`,
  )
  const proc = startProcess(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], {
    logFile: join(dir, 'stdout.log'),
  })
  return _started('nginx (stream module)', port, proc, () => _listening(port))
}

async function _startHaproxy(upstreamPort: number): Promise<StreamReference> {
  const dir = makeTempDir('bench-streams-haproxy-')
  const port = await freePort()
  writeFileSync(
    join(dir, 'haproxy.cfg'),
    `global
  maxconn 64
defaults
  mode tcp
  timeout connect 5s
  timeout client 120s
  timeout server 120s
frontend bench
  bind 127.0.0.1:${port}
  default_backend upstream
backend upstream
  server bulk 127.0.0.1:${upstreamPort}
`,
  )
  const proc = startProcess(HAPROXY, ['-db', '-f', join(dir, 'haproxy.cfg')], { logFile: join(dir, 'haproxy.log') })
  return _started('HAProxy', port, proc, () => _listening(port))
}

async function _startSpliceRelay(upstreamPort: number): Promise<StreamReference> {
  const dir = makeTempDir('bench-streams-splice-')
  const bin = join(dir, 'splice-relay')
  execFileSync('go', ['build', '-o', bin, '.'], { cwd: SPLICE_RELAY_SOURCE, stdio: 'pipe' })
  const port = await freePort()
  const logFile = join(dir, 'relay.log')
  const proc = startProcess(bin, [`127.0.0.1:${port}`, `127.0.0.1:${upstreamPort}`], { logFile })
  return _started('splice relay (the floor)', port, proc, () => existsSync(logFile) && readFileSync(logFile, 'utf8').includes('ready'))
}

/**
 * Starts every reference this machine has in front of the upstream. `missing` names the ones
 * it lacks and how to get them (the bench prints it and goes on without them).
 */
export async function startStreamReferences(upstreamPort: number): Promise<{ references: StreamReference[]; missing: string[] }> {
  const references: StreamReference[] = []
  const missing: string[] = []
  if (existsSync(NGINX) && existsSync(NGINX_STREAM_MODULE)) references.push(await _startNginxStream(upstreamPort))
  else missing.push('nginx stream module (apt-get install nginx libnginx-mod-stream)')
  if (existsSync(HAPROXY)) references.push(await _startHaproxy(upstreamPort))
  else missing.push('HAProxy (apt-get install haproxy)')
  try {
    references.push(await _startSpliceRelay(upstreamPort))
  } catch (err) {
    missing.push(`splice relay (go build failed: ${(err as Error).message.split('\n')[0]})`)
  }
  return { references, missing }
}
