import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadProxyConfig, readProxyConfigText } from '../../server/utils/proxy/nodes/client'
import { startCaddy, type CaddyHandle } from '../support/caddy'
import { freePort, unusedPort } from '../support/ports'
import { waitFor } from '../support/processes'

// Caddy answers no read of its configuration while it loads one: GET /config/ waits for the
// load's lock. The panel's drift check reads the configuration every 2 s with a 2 s limit, so
// under load a read queued behind the panel's own push timed out and the proxy was reported
// unreachable (`/api/dashboard/health` said reachable: false right after a push that worked).
// Such a read (any GET of the client) is now made again once the push is done (client.ts, _get).

let caddy: CaddyHandle
let httpPort: number

beforeAll(async () => {
  caddy = await startCaddy()
  httpPort = await freePort()
})

afterAll(async () => {
  await caddy?.stop()
})

/** A configuration that takes Caddy seconds to load (2.5 s on a quiet 2-core machine) and a tenth of that to read: 40,000 hosts. */
function slowToLoad(marker: string): object {
  const routes = Array.from({ length: 40_000 }, (_, i) => ({
    match: [{ host: [`h${i}.example.test`] }],
    handle: [
      { handler: 'headers', response: { set: { 'X-Marker': [marker] } } },
      { handler: 'reverse_proxy', upstreams: [{ dial: `127.0.0.1:${1024 + (i % 50)}` }] },
    ],
  }))
  return {
    admin: { listen: caddy.adminListen },
    apps: { http: { servers: { s: { listen: [`127.0.0.1:${httpPort}`], routes, automatic_https: { disable: true } } } } },
  }
}

it('a read of the configuration that waits behind our own load is answered after it, not reported unreachable', async () => {
  const first = await loadProxyConfig(caddy.adminUrl, JSON.stringify(slowToLoad('first')))
  expect(first).toEqual({ outcome: 'applied' })
  const loadRequests = () => readFileSync(caddy.logFile, 'utf8').split('"uri":"/load"').length - 1
  const before = loadRequests()
  const second = loadProxyConfig(caddy.adminUrl, JSON.stringify(slowToLoad('second')))
  // Once Caddy has the request it reads the body and takes the lock for the whole load.
  await waitFor(async () => loadRequests() > before, { timeoutMs: 10_000, what: 'Caddy receiving the second /load' })
  // Less than the rest of the load, several times what a read takes once it is done (also under a CPU
  // hog): without the read again, this is "no answer within 1000 ms".
  const read = await readProxyConfigText(caddy.adminUrl, { timeoutMs: 1_000 })
  expect(await second).toEqual({ outcome: 'applied' })
  expect(read, JSON.stringify(read).slice(0, 300)).toMatchObject({ ok: true })
  // Read behind the lock: the configuration just loaded (or, had it come first, the one before).
  expect((read as { text: string }).text).toMatch(/"X-Marker":\["(first|second)"\]/)
})

it('a read that gets no answer with no load of ours under way is reported at once', async () => {
  // Nothing listens there: no load of this panel runs against it, so no second read is made.
  const read = await readProxyConfigText(`http://127.0.0.1:${await unusedPort()}`, { timeoutMs: 200 })
  expect(read.ok).toBe(false)
  expect((read as { error: string }).error).toMatch(/is unreachable: ECONNREFUSED/)
})
