import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { writeFileSync } from 'node:fs'
import { freePort, freePorts } from './ports'
import { makeTempDir, requireBinary, startProcess, waitFor, type ManagedProcess } from './processes'

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

// A primary, its replica and Sentinels (issue 41 item 3, docs/scaling.md): for the
// storage failing over. Everything listens on the addresses given, which must be
// ones the node namespaces reach (the host ends of their veth pairs, netns.ts
// createNodeNamespaces), and on loopback for redis-cli. Passwords reach redis-cli
// through REDISCLI_AUTH, never its argument list (which a failure message could quote).

export const REDIS_SENTINEL_BIN = '/usr/bin/redis-sentinel'

export interface RedisProcess {
  /** 'host:port' on the first address given (what the nodes are told). */
  address: string
  host: string
  port: number
  readonly pid: number
  logFile: string
  workDir: string
  /** redis-cli on loopback with the password; resolves with its output (trimmed), rejects on failure. */
  cli(args: string[]): Promise<string>
  /** SIGTERM and wait. */
  stop(): Promise<void>
  /** SIGKILL, by its PID: a crash (no shutdown, no last save), then wait until it is gone. */
  kill(): Promise<void>
}

function _redisProcess(
  bin: string,
  conf: string,
  dir: string,
  host: string,
  port: number,
  password: string,
  what: string,
): { proc: ManagedProcess; handle: RedisProcess; ready: Promise<void> } {
  const logFile = join(dir, `${what}.log`)
  const proc = startProcess(bin, [conf], { cwd: dir, logFile })
  const cli = async (args: string[]) => {
    const r = await run(REDIS_CLI_BIN, ['--no-auth-warning', '-h', '127.0.0.1', '-p', String(port), ...args], {
      env: { ...process.env, ...(password ? { REDISCLI_AUTH: password } : {}) },
      timeout: 5_000,
    })
    return r.stdout.trim()
  }
  const ready = waitFor(async () => (await cli(['PING'])) === 'PONG', {
    timeoutMs: 20_000,
    what: `${what} on ${host}:${port}`,
    process: proc,
  })
  const handle: RedisProcess = {
    address: `${host.includes(':') ? `[${host}]` : host}:${port}`,
    host,
    port,
    get pid() {
      return proc.pid
    },
    logFile,
    workDir: dir,
    cli,
    stop: () => proc.stop(),
    async kill() {
      proc.signal('SIGKILL')
      await proc.exited
    },
  }
  return { proc, handle, ready }
}

/** The lines every config file here starts with: where it listens and keeps its files, in the foreground, logging to stdout. */
function _listenLines(binds: string[], port: number, dir: string): string[] {
  return [`bind ${[...new Set(binds)].join(' ')}`, `port ${port}`, `dir ${dir}`, 'daemonize no', 'logfile ""']
}

/**
 * One redis-server with `password` (requirepass, and masterauth for a replica), listening on
 * `addresses` (the first is the one it announces) and 127.0.0.1, no persistence to disk.
 * `replicaOf` makes it a replica of that server.
 */
export async function startRedisServer(opts: {
  addresses: string[]
  password: string
  replicaOf?: { host: string; port: number }
  port?: number
}): Promise<RedisProcess> {
  requireBinary(REDIS_SERVER_BIN, 'redis-server')
  requireBinary(REDIS_CLI_BIN, 'redis-cli')
  if (!opts.addresses.length) throw new Error('startRedisServer needs at least one address the nodes reach')
  const dir = makeTempDir('redis-')
  const port = opts.port ?? (await freePorts(1))[0]!
  const host = opts.addresses[0]!
  const conf = join(dir, 'redis.conf')
  writeFileSync(
    conf,
    [
      ..._listenLines([...opts.addresses, '127.0.0.1'], port, dir),
      'save ""',
      'appendonly no',
      `requirepass "${opts.password}"`,
      `masterauth "${opts.password}"`,
      // What Sentinel and the primary report for this server: the address the nodes reach.
      `replica-announce-ip ${host}`,
      ...(opts.replicaOf ? [`replicaof ${opts.replicaOf.host} ${opts.replicaOf.port}`] : []),
      '',
    ].join('\n'),
    { mode: 0o600 },
  )
  const { handle, ready } = _redisProcess(REDIS_SERVER_BIN, conf, dir, host, port, opts.password, 'redis-server')
  await ready
  return handle
}

export interface SentinelProcess extends RedisProcess {}

export interface RedisSentinelSet {
  /** The name Sentinel monitors (`sentinel monitor <name> ...`): the setting's sentinel_master. */
  masterName: string
  password: string
  /** Sentinel's own password (requirepass of the Sentinels), '' when none. */
  sentinelPassword: string
  primary: RedisProcess
  replica: RedisProcess
  sentinels: SentinelProcess[]
  /** The Sentinels' 'host:port' (the setting's addresses in sentinel mode). */
  sentinelAddresses: string[]
  /** 'host:port' that the first Sentinel names as the primary now. */
  currentPrimary(): Promise<string>
  /** Waits until the replica holds everything the primary has, and every Sentinel knows the replica. */
  waitInSync(timeoutMs?: number): Promise<void>
  /** SIGKILL the server that is primary now, by its PID. Returns it. */
  killPrimary(): Promise<RedisProcess>
  /** Waits until every Sentinel names `server` as the primary and it answers role master. */
  waitForPrimary(server: RedisProcess, timeoutMs?: number): Promise<void>
  stop(): Promise<void>
}

/**
 * A Redis primary, one replica of it (`replicaof`), and `sentinels` (1 to 3) redis-sentinel
 * processes watching it with quorum 1, down-after-milliseconds 1000 and failover-timeout
 * 3000, all on `addresses` (the first is the one announced to clients) with `password`.
 * `sentinelPassword` protects the Sentinels themselves.
 */
export async function startRedisSentinelSet(opts: {
  addresses: string[]
  password: string
  sentinelPassword?: string
  sentinels?: number
  masterName?: string
}): Promise<RedisSentinelSet> {
  requireBinary(REDIS_SENTINEL_BIN, 'redis-sentinel')
  const count = opts.sentinels ?? 1
  if (count < 1 || count > 3) throw new Error('between 1 and 3 Sentinels')
  const masterName = opts.masterName ?? 'panelprimary'
  const sentinelPassword = opts.sentinelPassword ?? ''
  const started: RedisProcess[] = []
  try {
    const primary = await startRedisServer({ addresses: opts.addresses, password: opts.password })
    started.push(primary)
    const replica = await startRedisServer({
      addresses: opts.addresses,
      password: opts.password,
      replicaOf: { host: primary.host, port: primary.port },
    })
    started.push(replica)
    const sentinels: SentinelProcess[] = []
    const ports = await freePorts(count)
    for (const port of ports) {
      const dir = makeTempDir('redis-sentinel-')
      const host = opts.addresses[0]!
      const conf = join(dir, 'sentinel.conf')
      // Sentinel rewrites this file as it learns (replicas, other Sentinels, the new primary).
      writeFileSync(
        conf,
        [
          ..._listenLines([...opts.addresses, '127.0.0.1'], port, dir),
          `sentinel announce-ip ${host}`,
          ...(sentinelPassword ? [`requirepass "${sentinelPassword}"`, `sentinel sentinel-pass "${sentinelPassword}"`] : []),
          `sentinel monitor ${masterName} ${primary.host} ${primary.port} 1`,
          `sentinel auth-pass ${masterName} "${opts.password}"`,
          `sentinel down-after-milliseconds ${masterName} 1000`,
          `sentinel failover-timeout ${masterName} 3000`,
          `sentinel parallel-syncs ${masterName} 1`,
          '',
        ].join('\n'),
        { mode: 0o600 },
      )
      const { handle, ready } = _redisProcess(REDIS_SENTINEL_BIN, conf, dir, host, port, sentinelPassword, 'redis-sentinel')
      started.push(handle)
      await ready
      sentinels.push(handle)
    }
    const servers = [primary, replica]
    const named = async (s: SentinelProcess) => {
      const [h, p] = (await s.cli(['SENTINEL', 'get-master-addr-by-name', masterName])).split('\n')
      return `${h}:${p}`
    }
    const set: RedisSentinelSet = {
      masterName,
      password: opts.password,
      sentinelPassword,
      primary,
      replica,
      sentinels,
      sentinelAddresses: sentinels.map((s) => s.address),
      currentPrimary: () => named(sentinels[0]!),
      async waitInSync(timeoutMs = 20_000) {
        await waitFor(
          async () => {
            const now = await set.currentPrimary()
            const p = servers.find((s) => s.address === now)
            const r = servers.find((s) => s !== p)
            if (!p || !r) return false
            const [pInfo, rInfo] = await Promise.all([p.cli(['INFO', 'replication']), r.cli(['INFO', 'replication'])])
            const field = (info: string, key: string) => new RegExp(`(?:^|\\n)${key}:([^\\r\\n]*)`).exec(info)?.[1]
            if (field(rInfo, 'master_link_status') !== 'up') return false
            if (field(pInfo, 'master_repl_offset') !== field(rInfo, 'slave_repl_offset')) return false
            for (const s of sentinels) {
              const replicas = await s.cli(['SENTINEL', 'replicas', masterName])
              if (!replicas.includes(String(r.port))) return false
            }
            return true
          },
          { timeoutMs, what: 'the Redis replica in sync and known to every Sentinel' },
        )
      },
      async killPrimary() {
        const now = await set.currentPrimary()
        const p = servers.find((s) => s.address === now)
        if (!p) throw new Error(`Sentinel names ${now} as the primary, which is neither server started here`)
        await p.kill()
        return p
      },
      async waitForPrimary(server, timeoutMs = 30_000) {
        await waitFor(
          async () => {
            for (const s of sentinels) if ((await named(s)) !== server.address) return false
            return /(?:^|\n)role:master\r?\n/.test(await server.cli(['INFO', 'replication']))
          },
          { timeoutMs, what: `Sentinel promoting ${server.address}`, logFile: sentinels[0]!.logFile },
        )
      },
      async stop() {
        for (const s of [...sentinels, replica, primary]) await s.stop()
      },
    }
    return set
  } catch (err) {
    for (const s of started.reverse()) await s.stop().catch(() => {})
    throw err
  }
}

/** A Redis Cluster of `masters` primaries (no replicas) on loopback, its 16,384 slots spread over them. */
export interface RedisCluster {
  masters: RedisProcess[]
  /** Every primary's 'host:port', what the storage's `addresses` can name. */
  addresses: string[]
  stop(): Promise<void>
}

export async function startRedisCluster(opts: { password: string; masters?: number }): Promise<RedisCluster> {
  const count = opts.masters ?? 3
  // Each node's cluster bus gets a free port of its own (the default, port + 10000, may be taken or past 65535).
  const ports = await freePorts(count * 2)
  const masters: RedisProcess[] = []
  const stop = async () => {
    await Promise.all(masters.map((m) => m.stop()))
  }
  try {
    for (let i = 0; i < count; i++) {
      const port = ports[i]!
      const dir = makeTempDir('redis-cluster-')
      const conf = join(dir, 'redis.conf')
      writeFileSync(
        conf,
        [
          ..._listenLines(['127.0.0.1'], port, dir),
          'save ""',
          'appendonly no',
          'cluster-enabled yes',
          `cluster-port ${ports[count + i]}`,
          'cluster-config-file nodes.conf',
          'cluster-node-timeout 5000',
          `requirepass "${opts.password}"`,
          `masterauth "${opts.password}"`,
          '',
        ].join('\n'),
        { mode: 0o600 },
      )
      const { handle, ready } = _redisProcess(REDIS_SERVER_BIN, conf, dir, '127.0.0.1', port, opts.password, 'redis-cluster-node')
      masters.push(handle)
      await ready
    }
    const addresses = masters.map((m) => m.address)
    await run(REDIS_CLI_BIN, ['--no-auth-warning', '--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'], {
      env: { ...process.env, REDISCLI_AUTH: opts.password },
      timeout: 30_000,
    })
    // Every primary must know the whole slot map before a client is pointed at any of them.
    await waitFor(
      async () => (await Promise.all(masters.map((m) => m.cli(['CLUSTER', 'INFO'])))).every((i) => /cluster_state:ok/.test(i)),
      {
        timeoutMs: 30_000,
        what: `the Redis Cluster on ${addresses.join(', ')} to be ready`,
      },
    )
    return { masters, addresses, stop }
  } catch (err) {
    await stop()
    throw err
  }
}
