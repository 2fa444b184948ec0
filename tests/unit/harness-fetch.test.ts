import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { afterAll, beforeAll, expect, it } from 'vitest'

// The harness's fetch (tests/support/no-idle-reuse.ts) against a server that closes idle
// connections quickly, in a process of its own, while this process cannot run its timers
// or read the close: what a loaded machine does to the suite's client.
let server: ReturnType<typeof spawn>
let url: string
beforeAll(async () => {
  // Keeps a connection open after each answer and closes it 100 ms later, announcing no
  // timeout (as a server whose idle timer fires before the client's does).
  const code = `
    require('node:net').createServer((socket) => {
      let idle
      socket.on('data', () => {
        clearTimeout(idle)
        socket.write('HTTP/1.1 200 OK\\r\\ncontent-length: 2\\r\\nconnection: keep-alive\\r\\n\\r\\nok')
        idle = setTimeout(() => socket.destroy(), 100)
      })
      socket.on('error', () => {})
    }).listen(0, '127.0.0.1', function () { console.log(this.address().port) })`
  server = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] })
  const [port] = await once(server.stdout!, 'data')
  url = `http://127.0.0.1:${String(port).trim()}/`
})
afterAll(() => {
  server.kill()
})

it('never writes a request on a connection the server closed while the client was busy', async () => {
  for (let i = 0; i < 2; i++) {
    expect(await (await fetch(url)).text()).toBe('ok')
    // A busy client: the event loop is held past the server's idle timeout (100 ms), so
    // the server's close is not read before the next request is sent. Not a wait for a
    // condition: the hold is what makes the next request race the close.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500)
    expect(await (await fetch(url)).text()).toBe('ok')
  }
})
