import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { freePort } from '../tests/support/ports'
import { makeTempDir } from '../tests/support/processes'
import { cpuMsOfTree } from './rss'

// The peer reference of the WAF benchmark (issue 40): nginx + ModSecurity v3 + the OWASP CRS from
// Debian's packages, started by the bench on loopback in front of the same upstream. A bench
// reference only: nothing installs it for the tests (docs/performance.md says how).

const NGINX = '/usr/sbin/nginx'
const MODULE = '/usr/lib/nginx/modules/ngx_http_modsecurity_module.so'
const CRS_SETUP = '/etc/modsecurity/crs/crs-setup.conf'
const CRS_RULES = '/usr/share/modsecurity-crs/rules'

/** What is missing for the reference, or null when nginx, the module and the CRS are installed. */
export function nginxModsecurityMissing(): string | null {
  const missing = [NGINX, MODULE, CRS_SETUP, CRS_RULES].filter((p) => !existsSync(p))
  return missing.length ? missing.join(', ') : null
}

/** The CRS version Debian ships (crs-setup.conf's tx.crs_setup_version, e.g. 334 = 3.3.4). */
export function crsVersion(): string {
  const m = /tx\.crs_setup_version=(\d)(\d)(\d+)/.exec(readFileSync(CRS_SETUP, 'utf8'))
  return m ? `${m[1]}.${m[2]}.${m[3]}` : 'unknown'
}

export interface NginxReference {
  /** Port of the server without ModSecurity (nginx's own proxying cost). */
  plainPort: number
  /** Port of the server with ModSecurity and the full CRS in blocking mode. */
  wafPort: number
  pid: number
  /** CPU time (clock ticks) of the master and its workers. */
  cpuTicks(): number
  stop(): Promise<void>
}

/**
 * ModSecurity's configuration, mirroring what the panel gives Coraza for a full-profile host in
 * blocking mode (server/utils/proxy/build/waf.ts): the engine's recommended settings (request
 * and response bodies, the JSON body processor), the panel's thresholds set before the CRS reads
 * them, paranoia level 1 (the CRS default, as the panel's), every CRS rule file, and the audit
 * log of relevant transactions only.
 */
function _modsecurityRules(dir: string, inbound: number, outbound: number): string {
  return [
    'SecRuleEngine On',
    'SecRequestBodyAccess On',
    // The recommended file's JSON processor rule: ARGS from a JSON body, as Coraza parses it.
    `SecRule REQUEST_HEADERS:Content-Type "^application/json" "id:200001,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=JSON"`,
    'SecRequestBodyLimit 13107200',
    'SecRequestBodyLimitAction Reject',
    'SecResponseBodyAccess On',
    'SecResponseBodyMimeType text/plain text/html text/xml',
    'SecResponseBodyLimit 524288',
    'SecResponseBodyLimitAction ProcessPartial',
    `SecTmpDir ${dir}`,
    `SecDataDir ${dir}`,
    `SecAction "id:900000,phase:1,pass,nolog,t:none,setvar:tx.paranoia_level=1"`,
    `SecAction "id:900110,phase:1,pass,nolog,t:none,setvar:tx.inbound_anomaly_score_threshold=${inbound},setvar:tx.outbound_anomaly_score_threshold=${outbound}"`,
    `Include ${CRS_SETUP}`,
    `Include ${CRS_RULES}/*.conf`,
    'SecAuditEngine RelevantOnly',
    'SecAuditLogRelevantStatus "^(?:5|4(?!04))"',
    'SecAuditLogParts ABIJDEFHKZ',
    'SecAuditLogType Serial',
    `SecAuditLog ${join(dir, 'modsec-audit.log')}`,
  ].join('\n')
}

function _nginxConf(dir: string, upstreamPort: number, plainPort: number, wafPort: number): string {
  const location = `location / {
      proxy_pass http://bench_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }`
  return `load_module ${MODULE};
daemon off;
worker_processes 2;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  # An access log line per request, as the panel's Caddy writes one.
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  # The 16 KB body stays in memory, as it does in Caddy.
  client_body_buffer_size 64k;
  keepalive_requests 1000000;
  upstream bench_upstream {
    server 127.0.0.1:${upstreamPort};
    keepalive 32;
  }
  server {
    listen 127.0.0.1:${plainPort};
    ${location}
  }
  server {
    listen 127.0.0.1:${wafPort};
    modsecurity on;
    modsecurity_rules_file ${dir}/modsecurity.conf;
    ${location}
  }
}
`
}

/** GET on a port until it answers (nginx loads the CRS in the master before it listens). */
export function statusOf(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host: 'bench.test' } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })
}

/** Starts nginx with a plain and a ModSecurity server in front of the upstream; stops only this nginx. */
export async function startNginxModsecurity(opts: { upstreamPort: number; inbound: number; outbound: number }): Promise<NginxReference> {
  const dir = makeTempDir('bench-nginx-')
  for (const d of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, d))
  const plainPort = await freePort()
  const wafPort = await freePort()
  writeFileSync(join(dir, 'modsecurity.conf'), _modsecurityRules(dir, opts.inbound, opts.outbound))
  writeFileSync(join(dir, 'nginx.conf'), _nginxConf(dir, opts.upstreamPort, plainPort, wafPort))
  const child: ChildProcess = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], {
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let alive = true
  void exited.then(() => {
    alive = false
  })
  const pid = child.pid!
  const stop = async () => {
    if (!alive) return
    // QUIT: the master lets its workers finish and exit with it.
    process.kill(pid, 'SIGQUIT')
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))])
    if (alive) {
      process.kill(pid, 'SIGKILL')
      await exited
    }
  }
  try {
    for (const deadline = Date.now() + 60_000; ; ) {
      if (!alive) throw new Error(`nginx exited at start: ${readFileSync(join(dir, 'error.log'), 'utf8').slice(-2000)}`)
      try {
        await statusOf(wafPort, '/')
        break
      } catch (e) {
        if (Date.now() > deadline) throw e
        await new Promise((r) => setTimeout(r, 200))
      }
    }
  } catch (e) {
    await stop()
    throw e
  }
  return {
    plainPort,
    wafPort,
    pid,
    cpuTicks: () => cpuMsOfTree(pid) / 10,
    stop,
  }
}
