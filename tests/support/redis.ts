import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort } from './ports'
import { makeTempDir, requireBinary, startProcess, waitFor } from './processes'

// Debian's Redis (scripts/test.sh installs redis-server, redis-sentinel and redis-cli).
export const REDIS_SERVER_BIN = '/usr/bin/redis-server'
export const REDIS_CLI_BIN = '/usr/bin/redis-cli'

const run = promisify(execFile)

export interface RedisHandle {
  /** 'host:port' as the proxy's storage names it (bind address and port). */
  address: string
  host: string
  port: number
  pid: number
  workDir: string
  logFile: string
  /** Ends this redis-server (SIGTERM, then SIGKILL) and waits until it is gone. */
  stop(): Promise<void>
  /** redis-cli against this server (authenticated when it has a password); its standard output. */
  cli(args: string[]): Promise<string>
}

/**
 * A redis-server on a free port in a folder of its own, holding nothing on disk
 * (`--save ''`, no append-only file): what a test writes goes with the process.
 */
export async function startRedis(
  opts: {
    password?: string
    bind?: string
    /** TLS only on the port (no plain port): the server's certificate chain and key, and the CA redis-cli trusts. */
    tls?: { certFile: string; keyFile: string; caFile: string; serverName: string }
  } = {},
): Promise<RedisHandle> {
  requireBinary(REDIS_SERVER_BIN, 'redis-server')
  requireBinary(REDIS_CLI_BIN, 'redis-cli')
  const host = opts.bind ?? '127.0.0.1'
  const port = await freePort()
  const workDir = makeTempDir('redis-')
  const logFile = join(workDir, 'redis.log')
  const listen = opts.tls
    ? ['--port', '0', '--tls-port', String(port), '--tls-cert-file', opts.tls.certFile, '--tls-key-file', opts.tls.keyFile]
    : ['--port', String(port)]
  const args = [...listen, '--bind', host, '--dir', workDir, '--save', '', '--appendonly', 'no', '--daemonize', 'no']
  // Clients are not asked for a certificate (the storage authenticates with its password).
  if (opts.tls) args.push('--tls-ca-cert-file', opts.tls.caFile, '--tls-auth-clients', 'no')
  if (opts.password) args.push('--requirepass', opts.password)
  const tlsArgs = opts.tls ? ['--tls', '--cacert', opts.tls.caFile, '--sni', opts.tls.serverName] : []
  const proc = startProcess(REDIS_SERVER_BIN, args, { cwd: workDir, logFile })
  // The password goes to redis-cli through its environment (REDISCLI_AUTH), not its command line.
  const cli = async (cmd: string[]) =>
    (
      await run(REDIS_CLI_BIN, ['-h', host, '-p', String(port), ...tlsArgs, ...cmd], {
        env: { ...process.env, ...(opts.password ? { REDISCLI_AUTH: opts.password } : {}) },
        maxBuffer: 16 << 20,
      })
    ).stdout
  await waitFor(async () => (await cli(['ping'])).trim() === 'PONG', {
    timeoutMs: 20_000,
    what: `redis-server (${host}:${port})`,
    process: proc,
  })
  return {
    address: `${host.includes(':') ? `[${host}]` : host}:${port}`,
    host,
    port,
    pid: proc.pid,
    workDir,
    logFile,
    stop: () => proc.stop(),
    cli,
  }
}
