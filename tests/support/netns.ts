import { execFile, execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, existsSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { onProcessExit, requireBinary } from './processes'

const run = promisify(execFile)

// A "public" client for the proxy: a network namespace joined to this host by a
// veth pair, on 198.51.100.0/24 (TEST-NET-2). Never 203.0.113.0/24 or 192.0.2.0/24
// on these machines: the uplink and the package registries live there.
//
// Only one such namespace can exist on a machine at a time (the /24 route would
// overlap), so creation takes a machine-wide lock file that holds the owner's PID;
// a lock whose owner is gone is taken over and its namespace removed.

const ALLOWED_NET = '198.51.100.0/24'
const NS_PREFIX = 'paneltest-'
const LOCK_FILE = join(existsSync('/run/lock') ? '/run/lock' : tmpdir(), 'panel-test-netns.lock')

export interface PublicClientNamespace {
  name: string
  hostAddress: string
  clientAddresses: string[]
  /** The veth end on the host (holds hostAddress). */
  hostInterface: string
  /** Runs a command inside the namespace (never rejects; code is the exit status). */
  exec(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }>
  /** curl inside the namespace; status 0 when no HTTP answer came (curl's 000). */
  curl(
    url: string,
    extraArgs?: string[],
    opts?: { fromAddress?: string; timeoutSec?: number },
  ): Promise<{ status: number; body: string; exitCode: number; stderr: string }>
  destroy(): Promise<void>
}

function _ipv4ToInt(a: string): number {
  const p = a.split('.').map(Number)
  if (p.length !== 4 || p.some((n) => !Number.isInteger(n) || n < 0 || n > 255)) throw new Error(`not an IPv4 address: ${a}`)
  return ((p[0]! << 24) | (p[1]! << 16) | (p[2]! << 8) | p[3]!) >>> 0
}

function _cidr(c: string): { start: number; end: number } {
  const [addr, bitsText] = c.split('/')
  const bits = bitsText === undefined ? 32 : Number(bitsText)
  const size = 2 ** (32 - bits)
  const start = Math.floor(_ipv4ToInt(addr!) / size) * size
  return { start, end: start + size - 1 }
}

function _inAllowedNet(a: string): boolean {
  const n = _ipv4ToInt(a),
    net = _cidr(ALLOWED_NET)
  return n >= net.start && n <= net.end
}

/** Routes of `ip -4 route` (main table) whose destination overlaps 198.51.100.0/24. */
export async function overlappingRoutes(): Promise<string[]> {
  const net = _cidr(ALLOWED_NET)
  const out: string[] = []
  for (const line of (await run('ip', ['-4', 'route'])).stdout.split('\n')) {
    const dest = line.trim().split(/\s+/)[0]
    if (!dest || dest === 'default' || !/^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(dest)) continue
    const r = _cidr(dest)
    if (r.start <= net.end && net.start <= r.end) out.push(line.trim())
  }
  return out
}

function _alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function _readLock(): { pid: number; name: string } | null {
  try {
    const [pid, name] = readFileSync(LOCK_FILE, 'utf8').trim().split(/\s+/)
    return { pid: Number(pid), name: name ?? '' }
  } catch {
    return null
  }
}

/** Takes the machine-wide lock for `name`, waiting while a live process holds it. */
async function _acquireLock(name: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      const fd = openSync(LOCK_FILE, 'wx')
      writeSync(fd, `${process.pid} ${name}\n`)
      closeSync(fd)
      return
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    const owner = _readLock()
    if (owner && !_alive(owner.pid)) {
      // Its owner died without cleaning up: remove its namespace, then the lock.
      if (owner.name.startsWith(NS_PREFIX)) await run('ip', ['netns', 'del', owner.name]).catch(() => {})
      try {
        if (readFileSync(LOCK_FILE, 'utf8').startsWith(`${owner.pid} `)) unlinkSync(LOCK_FILE)
      } catch {
        /* raced */
      }
      continue
    }
    if (Date.now() > deadline) {
      throw new Error(
        `another test process (PID ${owner?.pid}) holds the public-client namespace ${owner?.name} (${LOCK_FILE}); waited ${timeoutMs} ms`,
      )
    }
    await new Promise((r) => setTimeout(r, 200))
  }
}

function _releaseLockSync(name: string): void {
  try {
    if (readFileSync(LOCK_FILE, 'utf8').trim() === `${process.pid} ${name}`) unlinkSync(LOCK_FILE)
  } catch {
    /* gone */
  }
}

/**
 * A "public" client: a network namespace whose veth end holds `clientAddresses`,
 * joined to a host veth end holding `hostAddress` (all /24 inside 198.51.100.0/24).
 * A Caddy that should be reachable from it must also listen on `hostAddress`.
 */
export async function createPublicClientNamespace(
  opts: { name?: string; hostAddress?: string; clientAddresses?: string[]; lockTimeoutMs?: number } = {},
): Promise<PublicClientNamespace> {
  requireBinary('/usr/bin/curl', 'curl')
  if (!existsSync('/usr/sbin/ip') && !existsSync('/usr/bin/ip') && !existsSync('/sbin/ip'))
    throw new Error('ip is not installed: run bash scripts/test.sh, which installs it')
  const hostAddress = opts.hostAddress ?? '198.51.100.1'
  const clientAddresses = opts.clientAddresses ?? ['198.51.100.10']
  for (const a of [hostAddress, ...clientAddresses]) {
    if (!_inAllowedNet(a))
      throw new Error(
        `${a} is outside ${ALLOWED_NET}: public-client namespaces use ${ALLOWED_NET} only (never 203.0.113.0/24 or 192.0.2.0/24 here)`,
      )
  }
  if (clientAddresses.length === 0 || clientAddresses.includes(hostAddress))
    throw new Error('clientAddresses must be non-empty and differ from hostAddress')
  const tag = randomBytes(3).toString('hex')
  const name = opts.name ?? `${NS_PREFIX}${process.pid}-${tag}`
  const hostIf = `vph${tag}`,
    nsIf = `vpn${tag}`

  await _acquireLock(name, opts.lockTimeoutMs ?? 90_000)
  let destroyed = false
  const destroySync = () => {
    if (destroyed) return
    destroyed = true
    try {
      execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' })
    } catch {
      /* not created */
    }
    try {
      execFileSync('ip', ['link', 'del', hostIf], { stdio: 'ignore' })
    } catch {
      /* went with the namespace */
    }
    _releaseLockSync(name)
  }
  const unregister = onProcessExit(destroySync)
  const destroy = async () => {
    if (destroyed) return
    destroyed = true
    unregister()
    await run('ip', ['netns', 'del', name]).catch(() => {})
    await run('ip', ['link', 'del', hostIf]).catch(() => {})
    _releaseLockSync(name)
  }
  try {
    // We hold the lock: any namespace of ours still around belongs to a dead run.
    for (const line of (await run('ip', ['netns', 'list'])).stdout.split('\n')) {
      const stale = line.split(' ')[0]
      if (stale?.startsWith(NS_PREFIX) && stale !== name) await run('ip', ['netns', 'del', stale]).catch(() => {})
    }
    const overlap = await overlappingRoutes()
    if (overlap.length) throw new Error(`routes overlapping ${ALLOWED_NET} already exist on this machine: ${overlap.join('; ')}`)
    const ip = (args: string[]) => run('ip', args)
    await ip(['netns', 'add', name])
    await ip(['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf])
    await ip(['link', 'set', nsIf, 'netns', name])
    await ip(['addr', 'add', `${hostAddress}/24`, 'dev', hostIf])
    await ip(['link', 'set', hostIf, 'up'])
    for (const a of clientAddresses) await ip(['netns', 'exec', name, 'ip', 'addr', 'add', `${a}/24`, 'dev', nsIf])
    await ip(['netns', 'exec', name, 'ip', 'link', 'set', nsIf, 'up'])
    await ip(['netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up'])
  } catch (err) {
    await destroy()
    throw err
  }
  const exec = async (cmd: string, args: string[]) => {
    try {
      const r = await run('ip', ['netns', 'exec', name, cmd, ...args], { maxBuffer: 16 * 1024 * 1024 })
      return { code: 0, stdout: r.stdout, stderr: r.stderr }
    } catch (err) {
      const e = err as { code?: number | string; stdout?: string; stderr?: string; message: string }
      return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? e.message }
    }
  }
  return {
    name,
    hostAddress,
    clientAddresses,
    hostInterface: hostIf,
    exec,
    destroy,
    async curl(url, extraArgs = [], o = {}) {
      const args = [
        '-s',
        '-o',
        '-',
        '-w',
        '\n%{http_code}',
        '--max-time',
        String(o.timeoutSec ?? 10),
        ...(o.fromAddress ? ['--interface', o.fromAddress] : []),
        ...extraArgs,
        url,
      ]
      const r = await exec('curl', args)
      const cut = r.stdout.lastIndexOf('\n')
      return {
        status: Number(r.stdout.slice(cut + 1)) || 0,
        body: cut >= 0 ? r.stdout.slice(0, cut) : '',
        exitCode: r.code,
        stderr: r.stderr,
      }
    },
  }
}

/** One namespace of createNodeNamespaces: a machine of its own, reached from the host at `address`. */
export interface NodeNamespace {
  name: string
  /** The namespace's address (its veth end), where its servers listen. */
  address: string
  /** The host's end of the pair (the namespace's default route). */
  hostAddress: string
}

/**
 * `count` network namespaces, one per proxy node (issue 24's "Caddy processes in
 * network namespaces"): namespace k holds 198.51.100.(4k+2)/30 on a veth pair whose
 * host end holds 198.51.100.(4k+1), and routes everything else through the host. Each
 * is a machine of its own: its own loopback and ports, reached from the host (the
 * panel) only at its address. Taken under the same machine-wide lock as the public
 * client, whose /24 would overlap these /30s.
 */
export async function createNodeNamespaces(count: number, opts: { lockTimeoutMs?: number } = {}) {
  if (!existsSync('/usr/sbin/ip') && !existsSync('/usr/bin/ip') && !existsSync('/sbin/ip'))
    throw new Error('ip is not installed: run bash scripts/test.sh, which installs it')
  if (count < 1 || count > 60) throw new Error('between 1 and 60 node namespaces fit in 198.51.100.0/24')
  const tag = randomBytes(3).toString('hex')
  const lockName = `${NS_PREFIX}${process.pid}-${tag}-nodes`
  const nodes: Array<NodeNamespace & { hostIf: string }> = Array.from({ length: count }, (_, i) => ({
    name: `${NS_PREFIX}${process.pid}-${tag}-n${i + 1}`,
    address: `198.51.100.${4 * (i + 1) + 2}`,
    hostAddress: `198.51.100.${4 * (i + 1) + 1}`,
    hostIf: `vnh${tag}${i + 1}`,
  }))
  await _acquireLock(lockName, opts.lockTimeoutMs ?? 90_000)
  let destroyed = false
  const destroySync = () => {
    if (destroyed) return
    destroyed = true
    for (const n of nodes) {
      for (const args of [
        ['netns', 'del', n.name],
        ['link', 'del', n.hostIf],
      ])
        try {
          execFileSync('ip', args, { stdio: 'ignore' })
        } catch {
          /* not created, or gone with the namespace */
        }
    }
    _releaseLockSync(lockName)
  }
  const unregister = onProcessExit(destroySync)
  const destroy = async () => {
    unregister()
    destroySync()
  }
  try {
    for (const line of (await run('ip', ['netns', 'list'])).stdout.split('\n')) {
      const stale = line.split(' ')[0]
      if (stale?.startsWith(NS_PREFIX) && !nodes.some((n) => n.name === stale)) await run('ip', ['netns', 'del', stale]).catch(() => {})
    }
    const overlap = await overlappingRoutes()
    if (overlap.length) throw new Error(`routes overlapping ${ALLOWED_NET} already exist on this machine: ${overlap.join('; ')}`)
    const ip = (args: string[]) => run('ip', args)
    for (const n of nodes) {
      const nsIf = `vnn${n.hostIf.slice(3)}`
      await ip(['netns', 'add', n.name])
      await ip(['link', 'add', n.hostIf, 'type', 'veth', 'peer', 'name', nsIf])
      await ip(['link', 'set', nsIf, 'netns', n.name])
      await ip(['addr', 'add', `${n.hostAddress}/30`, 'dev', n.hostIf])
      await ip(['link', 'set', n.hostIf, 'up'])
      await ip(['netns', 'exec', n.name, 'ip', 'addr', 'add', `${n.address}/30`, 'dev', nsIf])
      await ip(['netns', 'exec', n.name, 'ip', 'link', 'set', nsIf, 'up'])
      await ip(['netns', 'exec', n.name, 'ip', 'link', 'set', 'lo', 'up'])
      await ip(['netns', 'exec', n.name, 'ip', 'route', 'add', 'default', 'via', n.hostAddress])
    }
  } catch (err) {
    await destroy()
    throw err
  }
  return { nodes: nodes.map(({ hostIf: _hostIf, ...n }) => n as NodeNamespace), destroy }
}
