import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { promisify } from 'node:util'

const run = promisify(execFile)

async function _ip(args: string[]) {
  return run('ip', args)
}

/**
 * A "public" client: a network namespace on 198.51.100.0/24 joined to this host
 * by a veth pair (never 203.0.113.0/24 or 192.0.2.0/24 on these machines).
 */
export async function createPublicClientNamespace(opts: { name?: string; hostAddress: string; clientAddresses: string[] }) {
  // A crashed earlier run may have left its namespace (and so its route) behind.
  for (const line of (await _ip(['netns', 'list'])).stdout.split('\n')) {
    const stale = line.split(' ')[0]
    if (stale?.startsWith('paneltest-')) await _ip(['netns', 'del', stale]).catch(() => {})
  }
  const routes = (await _ip(['-4', 'route'])).stdout
  if (routes.includes('198.51.100.')) throw new Error('a 198.51.100.0/24 route already exists on this machine; remove the old test namespace first')
  const tag = randomBytes(3).toString('hex')
  const name = opts.name ?? `paneltest-${tag}`
  const hostIf = `vph${tag}`, nsIf = `vpn${tag}`
  let destroyed = false
  const destroy = async () => {
    if (destroyed) return
    destroyed = true
    await _ip(['netns', 'del', name]).catch(() => {})
    await _ip(['link', 'del', hostIf]).catch(() => {})
  }
  try {
    await _ip(['netns', 'add', name])
    await _ip(['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf])
    await _ip(['link', 'set', nsIf, 'netns', name])
    await _ip(['addr', 'add', `${opts.hostAddress}/24`, 'dev', hostIf])
    await _ip(['link', 'set', hostIf, 'up'])
    for (const a of opts.clientAddresses) await _ip(['netns', 'exec', name, 'ip', 'addr', 'add', `${a}/24`, 'dev', nsIf])
    await _ip(['netns', 'exec', name, 'ip', 'link', 'set', nsIf, 'up'])
    await _ip(['netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up'])
  } catch (err) {
    await destroy()
    throw err
  }
  const exec = async (cmd: string, args: string[]) => {
    try {
      const r = await run('ip', ['netns', 'exec', name, cmd, ...args], { maxBuffer: 16 * 1024 * 1024 })
      return { code: 0, stdout: r.stdout, stderr: r.stderr }
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string }
      return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }
    }
  }
  return {
    name, hostAddress: opts.hostAddress, clientAddresses: opts.clientAddresses, exec, destroy,
    async curl(url: string, extraArgs: string[] = [], o: { fromAddress?: string } = {}) {
      const args = ['-s', '-o', '-', '-w', '\n%{http_code}', '--max-time', '10', ...(o.fromAddress ? ['--interface', o.fromAddress] : []), ...extraArgs, url]
      const r = await exec('curl', args)
      const cut = r.stdout.lastIndexOf('\n')
      return { status: Number(r.stdout.slice(cut + 1)), body: r.stdout.slice(0, cut) }
    },
  }
}
