import { existsSync, readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildProxyConfig } from '../server/utils/proxy/build/index'
import { STREAM_DEFAULTS } from '../server/utils/streams/schemas'
import { startCaddy, type CaddyHandle } from '../tests/support/caddy'
import { buildGroupSnapshot, buildSnapshot } from '../tests/support/factories'
import { freePort } from '../tests/support/ports'
import { makeTempDir, startProcess, waitFor, type ManagedProcess } from '../tests/support/processes'
import { median, ratioOf, reportFigures, type Figure } from './report'
import { cpuMsOfTree } from './rss'
import { startStreamReferences, type StreamReference } from './stream-references'

// TCP throughput through a stream (the production Caddy's layer-4 proxy, configured by
// the panel's builder) against a direct connection to the same upstream, alternated in
// the same run (docs/performance.md, goal >= 0.8x). The upstream (its own process) sends
// BENCH_STREAM_MB (default 256) MB and closes; the client, on loopback, reads to the end.
// Other proxies in front of the same upstream are measured in the same rounds when this
// machine has them (stream-references.ts: nginx's stream module, HAProxy, and a splice
// relay, the floor of any user-space proxy), each with the CPU it spends per GB.

const MB = 1024 * 1024
const TOTAL_MB = Number(process.env.BENCH_STREAM_MB ?? 256)
const PAIRS = 5

/**
 * The upstream, in a process of its own: in the bench's process it would share one
 * thread with the client, which holds the direct transfer back and not the stream's
 * (where Caddy buffers between two connections on another core). After the client's
 * first byte it sends TOTAL_MB MB as fast as the peer reads, then closes.
 */
const UPSTREAM_SCRIPT = `
const net = require('node:net')
const [port, totalMb] = process.argv.slice(1).map(Number)
const chunk = Buffer.alloc(1024 * 1024, 0x5a)
net.createServer((socket) => {
  socket.on('error', () => socket.destroy())
  socket.once('data', () => {
    let sent = 0
    const pump = () => {
      while (sent < totalMb) {
        sent++
        if (!socket.write(chunk)) return void socket.once('drain', pump)
      }
      socket.end()
    }
    pump()
  })
}).listen(port, '127.0.0.1', () => console.log('ready'))
`

let caddy: CaddyHandle
let upstream: ManagedProcess
let upstreamPort: number
let streamPort: number
let references: StreamReference[] = []
let missingReferences: string[] = []

beforeAll(async () => {
  upstreamPort = await freePort()
  const logFile = join(makeTempDir('bench-streams-upstream-'), 'upstream.log')
  upstream = startProcess(process.execPath, ['-e', UPSTREAM_SCRIPT, String(upstreamPort), String(TOTAL_MB)], { logFile })
  await waitFor(async () => existsSync(logFile) && readFileSync(logFile, 'utf8').includes('ready'), {
    timeoutMs: 30_000,
    what: 'the bulk upstream',
    process: upstream,
  })
  caddy = await startCaddy()
  streamPort = await freePort()
  const httpPort = await freePort()
  const { config, warnings } = buildProxyConfig(
    buildSnapshot({
      adminListen: caddy.adminListen,
      storageRoot: caddy.storageDir,
      logDir: makeTempDir('bench-streams-logs-'),
      httpListen: [`127.0.0.1:${httpPort}`],
      httpsListen: [`127.0.0.1:${await freePort()}`],
      httpPort,
      hosts: [],
      targetGroups: [buildGroupSnapshot({ id: 1, name: 'bulk', targets: [{ address: `127.0.0.1:${upstreamPort}`, weight: 1 }] })],
      streams: [{ ...STREAM_DEFAULTS, id: 1, name: 'bulk', protocol: 'tcp', listen_port: streamPort, target_group_id: 1 }],
    }),
  )
  expect(warnings).toEqual([])
  const res = await caddy.load(config)
  expect(res.status, res.body).toBe(200)
  ;({ references, missing: missingReferences } = await startStreamReferences(upstreamPort))
})

afterAll(async () => {
  for (const r of references) await r.stop()
  await caddy?.stop()
  await upstream?.stop()
})

/** Reads one whole transfer from this port: MB/s (1 MB = 2^20 bytes), and checks every byte came. */
function transfer(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let bytes = 0
    const t0 = performance.now()
    const socket = connect(port, '127.0.0.1', () => socket.write('g'))
    socket.on('data', (d) => {
      bytes += d.length
    })
    socket.on('error', reject)
    socket.on('end', () => {
      const seconds = (performance.now() - t0) / 1000
      if (bytes !== TOTAL_MB * MB) reject(new Error(`received ${bytes} bytes of ${TOTAL_MB * MB}`))
      else resolve(Math.round(TOTAL_MB / seconds))
    })
  })
}

it(`TCP bulk transfer (${TOTAL_MB} MB): through a stream against a direct connection`, async () => {
  const proxies = [{ name: 'a TCP stream (the production Caddy)', port: streamPort, cpuMs: () => cpuMsOfTree(caddy.pid) }, ...references]
  // A first transfer each way warms the upstream, each proxy and the page cache.
  await transfer(upstreamPort)
  for (const p of proxies) await transfer(p.port)
  const direct: number[] = []
  const through = proxies.map(() => ({ rates: [] as number[], cpuMs: 0 }))
  for (let i = 0; i < PAIRS; i++) {
    direct.push(await transfer(upstreamPort))
    for (const [k, p] of proxies.entries()) {
      const t0 = p.cpuMs()
      through[k]!.rates.push(await transfer(p.port))
      through[k]!.cpuMs += p.cpuMs() - t0
    }
  }
  const d = median(direct)
  console.log([`direct MB/s: ${direct.join(', ')}`, ...proxies.map((p, k) => `${p.name} MB/s: ${through[k]!.rates.join(', ')}`)].join('\n'))
  if (missingReferences.length) console.log(`references not measured (not installed): ${missingReferences.join('; ')}`)
  // CPU seconds the proxy spent per GB moved.
  const cpuPerGb = (cpuMs: number) => Number((cpuMs / 1000 / ((PAIRS * TOTAL_MB) / 1024)).toFixed(2))
  const figures: Figure[] = [
    { what: `direct to the upstream, median of ${PAIRS}`, value: d, unit: 'MB/s', budget: '-', withinBudget: true },
  ]
  for (const [k, p] of proxies.entries()) {
    const isStream = k === 0
    figures.push(
      {
        what: `through ${p.name}, median of ${PAIRS}`,
        value: median(through[k]!.rates),
        unit: 'MB/s',
        budget: '-',
        withinBudget: true,
        ratio: ratioOf(median(through[k]!.rates), d, 'direct, same run', isStream ? '>= 0.8' : 'reference'),
      },
      { what: `  CPU of ${p.name} per GB`, value: cpuPerGb(through[k]!.cpuMs), unit: 's', budget: '-', withinBudget: true },
    )
  }
  reportFigures('streams', figures)
})
