import { createServer, type Server } from 'node:http'
import { SignJWT } from 'jose'
import { freePort } from './ports'

// A loopback stand-in for CrowdSec's central API, so a test can watch what a
// registered engine sends upstream, on the engine's own code path. It answers
// the watcher login with a signed JWT, records every signal batch, and answers
// the rest (decision pulls, metrics) with empty successes.

export interface CapiSignal {
  scenario: string
  scenario_hash?: string
  source?: { value?: string; scope?: string }
  decisions?: Array<{ origin?: string; value?: string; scope?: string }>
}

export interface CapiStandIn {
  url: string
  signals: CapiSignal[]
  /** Every request path the engine sent, in order. */
  paths: string[]
  stop(): Promise<void>
}

export async function startCapiStandIn(): Promise<CapiStandIn> {
  const port = await freePort()
  const signals: CapiSignal[] = []
  const paths: string[] = []
  const key = new TextEncoder().encode('capi-stand-in-signing-key-0123456789abcdef')
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', async () => {
      const path = (req.url ?? '').split('?')[0]!
      paths.push(`${req.method} ${path}`)
      res.setHeader('content-type', 'application/json')
      if (path.endsWith('/watchers/login')) {
        const expire = new Date(Date.now() + 3600_000)
        const token = await new SignJWT({ id: 'panel-test' })
          .setProtectedHeader({ alg: 'HS256' })
          .setExpirationTime(Math.floor(expire.getTime() / 1000))
          .setIssuedAt()
          .sign(key)
        res.end(JSON.stringify({ code: 200, expire: expire.toISOString(), token }))
      } else if (path.endsWith('/signals')) {
        try {
          signals.push(...(JSON.parse(Buffer.concat(chunks).toString('utf8')) as CapiSignal[]))
        } catch {
          /* recorded as a path only */
        }
        res.end('"OK"')
      } else if (path.includes('/decisions')) {
        res.end(JSON.stringify({ new: [], deleted: [], links: {} }))
      } else {
        res.statusCode = 201
        res.end('{}')
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${port}/`,
    signals,
    paths,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
