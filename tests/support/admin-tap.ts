import { connect, createServer, type Socket } from 'node:net'

// Failure injection for the rolling push: a TCP relay in front of a real Caddy's
// admin API. It passes every connection through, except that once armed, the
// next `POST /load` first runs `onLoad` (the test kills the Caddy there) and then
// drops the connection: the node dies exactly while the panel pushes to it.
// Caddy's admin API answers only requests whose Host it knows: the node must list
// the relay's address in admin.origins (with its own listen address).

export interface AdminTap {
  /** 'http://127.0.0.1:<port>': register this as the node's admin URL. */
  url: string
  /** '127.0.0.1:<port>', for the node's admin.origins. */
  host: string
  /** The next POST /load runs `onLoad`, then its connection is dropped. */
  armNextLoad(onLoad: () => Promise<void>): void
  /** Whether an armed load has happened. */
  readonly fired: boolean
  stop(): Promise<void>
}

/** `targetPort`: read at each connection, so the relay can be made before the Caddy it fronts. */
export async function startAdminTap(targetPort: () => number, targetHost = '127.0.0.1'): Promise<AdminTap> {
  let armed: (() => Promise<void>) | null = null
  let fired = false
  const open = new Set<Socket>()
  const server = createServer((client) => {
    open.add(client)
    client.on('close', () => open.delete(client))
    client.once('data', (first) => {
      client.pause()
      const hook = armed
      if (hook && first.toString('latin1').startsWith('POST /load')) {
        armed = null
        void hook().finally(() => {
          fired = true
          client.destroy()
        })
        return
      }
      const upstream = connect(targetPort(), targetHost)
      open.add(upstream)
      upstream.on('close', () => open.delete(upstream))
      upstream.on('error', () => client.destroy())
      client.on('error', () => upstream.destroy())
      upstream.write(first)
      client.pipe(upstream).pipe(client)
      client.resume()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  return {
    url: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    armNextLoad(onLoad) {
      armed = onLoad
      fired = false
    },
    get fired() {
      return fired
    },
    async stop() {
      for (const s of open) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
