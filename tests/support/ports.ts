import { createServer, type Server } from 'node:net'

function _listen(): Promise<{ srv: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => resolve({ srv, port: (srv.address() as { port: number }).port }))
  })
}

function _close(srv: Server): Promise<void> {
  return new Promise((resolve) => srv.close(() => resolve()))
}

/** A port free on 127.0.0.1 right now (bind 127.0.0.1:0, read the port, close). */
export async function freePort(): Promise<number> {
  const { srv, port } = await _listen()
  await _close(srv)
  return port
}

/** `n` distinct free ports (all held open until every one is known, so none repeats). */
export async function freePorts(n: number): Promise<number[]> {
  const held = []
  try {
    for (let i = 0; i < n; i++) held.push(await _listen())
    return held.map((h) => h.port)
  } finally {
    await Promise.all(held.map((h) => _close(h.srv)))
  }
}
