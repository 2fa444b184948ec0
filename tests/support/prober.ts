import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { PublicClientNamespace } from './netns'
import { makeTempDir, startProcess, type ManagedProcess } from './processes'

// A client that keeps asking, from inside the public-client namespace and from
// one of its addresses, and writes one line per answer. One Node process (its
// own PID) instead of a curl per request: a request every few milliseconds.

export interface ProbeAnswer {
  sentAt: number
  doneAt: number
  status: number
  error?: string
}
export interface NamespaceProber {
  readonly pid: number
  /** Every answer so far (status 0: no HTTP answer, with the error code). */
  answers(): ProbeAnswer[]
  stop(): Promise<void>
}

const _SCRIPT = `
const http = require('node:http')
const [address, port, host, localAddress, intervalMs, concurrency] = process.argv.slice(1)
let stopping = false
process.on('SIGTERM', () => { stopping = true; setTimeout(() => process.exit(0), 200) })
function once() {
  if (stopping) return
  const sentAt = Date.now()
  const req = http.request({ host: address, port: Number(port), path: '/probe', localAddress, agent: false, timeout: 5000, headers: { host, connection: 'close' } }, (res) => {
    res.resume()
    res.on('end', () => { process.stdout.write(sentAt + ' ' + Date.now() + ' ' + res.statusCode + '\\n'); setTimeout(once, Number(intervalMs)) })
  })
  req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })))
  req.on('error', (e) => { process.stdout.write(sentAt + ' ' + Date.now() + ' 0 ' + (e.code || 'ERROR') + '\\n'); setTimeout(once, Number(intervalMs)) })
  req.end()
}
for (let i = 0; i < Number(concurrency); i++) once()
`

/** Starts probing `http://<address>:<port>/probe` with `Host: <host>` from `fromAddress` (one of the namespace's client addresses). */
export function startNamespaceProber(
  ns: PublicClientNamespace,
  opts: { address: string; port: number; host: string; fromAddress: string; intervalMs?: number; concurrency?: number },
): NamespaceProber {
  const logFile = join(makeTempDir('prober-'), 'answers.log')
  const proc: ManagedProcess = startProcess(
    'ip',
    [
      'netns',
      'exec',
      ns.name,
      process.execPath,
      '-e',
      _SCRIPT,
      opts.address,
      String(opts.port),
      opts.host,
      opts.fromAddress,
      String(opts.intervalMs ?? 5),
      String(opts.concurrency ?? 2),
    ],
    { logFile },
  )
  const answers = () => {
    let text = ''
    try {
      text = readFileSync(logFile, 'utf8')
    } catch {
      /* nothing yet */
    }
    return text
      .split('\n')
      .filter((l) => /^\d+ \d+ \d+/.test(l))
      .map((l) => {
        const [sentAt, doneAt, status, error] = l.split(' ')
        return { sentAt: Number(sentAt), doneAt: Number(doneAt), status: Number(status), ...(error ? { error } : {}) }
      })
  }
  return { pid: proc.pid, answers, stop: () => proc.stop() }
}
