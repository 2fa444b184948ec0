import { execFileSync } from 'node:child_process'
import { Resolver } from 'node:dns/promises'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from './ports'
import { makeTempDir, requireBinary, startProcess, waitFor, type ManagedProcess } from './processes'

// BIND 9 (Debian's bind9) as an authoritative DNS server on a free loopback
// port, in its own folder: primary zones that take TSIG-signed dynamic updates
// (RFC 2136), the server the panel's provider_c updates and Pebble validates
// DNS-01 against. Started with -g (foreground, log to stderr) and stopped by PID.

export const NAMED_BIN = '/usr/sbin/named'
export const TSIG_KEYGEN_BIN = '/usr/sbin/tsig-keygen'
export const NSUPDATE_BIN = '/usr/bin/nsupdate'

export interface TsigKey {
  name: string
  algorithm: string
  secret: string
}
/**
 * A zone and who may update it: `update-policy` rules in order, first match
 * wins, e.g. `deny acme-key name _acme-challenge.denied.example.test. TXT` then
 * `grant acme-key zonesub TXT`.
 */
export interface BindZone {
  name: string
  policy: string[]
}

export interface BindHandle {
  /** '127.0.0.1:<port>' (TCP and UDP). */
  address: string
  port: number
  workDir: string
  logFile: string
  readonly pid: number
  /** Replaces the keys (e.g. a rotated secret; a key left out is removed), reloads and waits until named took them. */
  setKeys(keys: TsigKey[]): Promise<void>
  /** The TXT strings of `name` as the server answers now ([] when it has none). */
  txt(name: string): Promise<string[]>
  /** Sends one update with nsupdate signed by `key`; resolves with nsupdate's exit code and output (0: accepted). */
  nsupdate(key: TsigKey, zone: string, commands: string[]): { code: number; output: string }
  stop(): Promise<void>
}

/** A fresh key as `tsig-keygen -a <algorithm> <name>` prints it (the secret is what an operator pastes into the panel). */
export function generateTsigKey(name: string, algorithm = 'hmac-sha256'): TsigKey {
  requireBinary(TSIG_KEYGEN_BIN, 'tsig-keygen (Debian package bind9)')
  const out = execFileSync(TSIG_KEYGEN_BIN, ['-a', algorithm, name], { encoding: 'utf8' })
  const secret = /secret "([^"]+)"/.exec(out)?.[1]
  if (!secret) throw new Error(`tsig-keygen printed no secret:\n${out}`)
  return { name, algorithm, secret }
}

function _keysConf(keys: TsigKey[]): string {
  return keys.map((k) => `key "${k.name}" {\n  algorithm ${k.algorithm};\n  secret "${k.secret}";\n};\n`).join('')
}

/**
 * `recursive`: answer recursive queries too, so a CNAME from one zone into another
 * is followed (a CA's resolver does that; an authoritative-only server answers the
 * CNAME alone). The root hints point at loopback: a name outside the zones fails
 * there and no query leaves the machine.
 */
export async function startBind(opts: { zones: BindZone[]; keys: TsigKey[]; recursive?: boolean }): Promise<BindHandle> {
  requireBinary(NAMED_BIN, 'named (Debian package bind9)')
  requireBinary(NSUPDATE_BIN, 'nsupdate (Debian package bind9-dnsutils)')
  const dir = makeTempDir('bind-')
  const port = await freePort()
  const address = `127.0.0.1:${port}`
  writeFileSync(join(dir, 'keys.conf'), _keysConf(opts.keys))
  if (opts.recursive) writeFileSync(join(dir, 'root.hints'), '. 3600000 NS root.loopback.\nroot.loopback. 3600000 A 127.0.0.1\n')
  for (const z of opts.zones) {
    // A short negative TTL: a lookup that missed the challenge record is not cached for long.
    writeFileSync(
      join(dir, `${z.name}.zone`),
      `$TTL 60\n@ IN SOA ns1.${z.name}. hostmaster.${z.name}. ( 1 60 60 600 5 )\n@ IN NS ns1.${z.name}.\nns1 IN A 127.0.0.1\n`,
    )
  }
  writeFileSync(
    join(dir, 'named.conf'),
    [
      'options {',
      `  directory "${dir}";`,
      `  pid-file "${join(dir, 'named.pid')}";`,
      `  session-keyfile "${join(dir, 'session.key')}";`,
      `  managed-keys-directory "${dir}";`,
      `  listen-on port ${port} { 127.0.0.1; };`,
      '  listen-on-v6 { none; };',
      ...(opts.recursive ? ['  recursion yes;', '  allow-recursion { 127.0.0.1; };'] : ['  recursion no;']),
      '  dnssec-validation no;',
      '  notify no;',
      '};',
      // No rndc channel: the harness reloads with SIGHUP to this PID.
      'controls { };',
      `include "${join(dir, 'keys.conf')}";`,
      ...(opts.recursive ? [`zone "." { type hint; file "${join(dir, 'root.hints')}"; };`] : []),
      ...opts.zones.map(
        (z) =>
          `zone "${z.name}" { type primary; file "${join(dir, `${z.name}.zone`)}"; update-policy { ${z.policy.map((p) => `${p};`).join(' ')} }; };`,
      ),
      '',
    ].join('\n'),
  )
  const logFile = join(dir, 'named.log')
  const resolver = new Resolver({ timeout: 2_000, tries: 1 })
  resolver.setServers([address])
  const proc: ManagedProcess = startProcess(NAMED_BIN, ['-g', '-4', '-c', join(dir, 'named.conf')], { cwd: dir, logFile })
  try {
    await waitFor(async () => (await resolver.resolveSoa(opts.zones[0]!.name)).serial >= 1, {
      timeoutMs: 60_000,
      what: 'named',
      process: proc,
    })
  } catch (err) {
    await proc.stop()
    throw err
  }
  const reloads = () => (readFileSync(logFile, 'utf8').match(/reloading configuration succeeded/g) ?? []).length
  return {
    address,
    port,
    workDir: dir,
    logFile,
    get pid() {
      return proc.pid
    },
    async setKeys(keys) {
      const before = reloads()
      writeFileSync(join(dir, 'keys.conf'), _keysConf(keys))
      proc.signal('SIGHUP')
      await waitFor(async () => reloads() > before, { timeoutMs: 60_000, what: 'named reload', process: proc })
    },
    async txt(name) {
      try {
        return (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''))
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        if (code === 'ENODATA' || code === 'ENOTFOUND') return []
        throw err
      }
    },
    nsupdate(key, zone, commands) {
      const script = [`server 127.0.0.1 ${port}`, `zone ${zone}`, ...commands, 'send', ''].join('\n')
      try {
        const output = execFileSync(NSUPDATE_BIN, ['-y', `${key.algorithm}:${key.name}:${key.secret}`], {
          input: script,
          encoding: 'utf8',
          stdio: ['pipe', 'pipe', 'pipe'],
        })
        return { code: 0, output }
      } catch (err) {
        const e = err as { status?: number; stdout?: string; stderr?: string }
        return { code: e.status ?? 1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` }
      }
    },
    stop: () => proc.stop(),
  }
}
