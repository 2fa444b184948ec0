import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { startPanel, type PanelHandle } from '../support/panel'

// Regression (issue 33, item 10; review Info "SSE tail"): /api/logs/tail had no cap, per user
// or overall, and every subscriber runs its filter (a regex maybe) on every ingested row. A
// session now holds at most 4 tails and the panel 64; past either, a 429 says what to close
// (server/utils/logs/hub.ts).

let panel: PanelHandle
const open: Array<ReadableStreamDefaultReader<Uint8Array>> = []

beforeAll(async () => {
  panel = await startPanel()
})
afterAll(async () => {
  await Promise.all(open.map((r) => r.cancel().catch(() => {})))
  await panel?.stop()
})

/** Opens a tail; a 200 is kept open (its reader returned), anything else is read to its end. */
async function tail(
  cookie: string,
): Promise<{ status: number; json?: any; retryAfter?: string | null; reader?: ReadableStreamDefaultReader<Uint8Array> }> {
  const res = await fetch(`${panel.url}/api/logs/tail`, { headers: { cookie } })
  if (res.status !== 200) return { status: res.status, json: await res.json(), retryAfter: res.headers.get('retry-after') }
  const reader = res.body!.getReader()
  await reader.read() // ": connected"
  open.push(reader)
  return { status: 200, reader }
}

/** A tail once the panel has seen earlier tails' connections end (their places are freed on close). */
function tailOnceFreed(cookie: string) {
  return eventually(
    () => tail(cookie),
    (r) => r.status === 200,
    10_000,
    50,
  )
}

describe('live tails are capped', () => {
  it('per session: a fifth tail is a 429 naming what to close; another session has its own; a closed tail frees its place', async () => {
    const a = await panel.login()
    for (let i = 0; i < 4; i++) expect((await tail(a)).status).toBe(200)
    const fifth = await tail(a)
    expect(fifth.status).toBe(429)
    expect(fifth.json).toEqual({
      error:
        'this session already has 4 live log tails open, the most one session may hold: close one (another tab or window showing live logs) and try again',
    })
    expect(Number(fifth.retryAfter)).toBeGreaterThan(0)
    // Another session (another browser) is not affected.
    expect((await tail(await panel.login())).status).toBe(200)
    // Closing one of the four frees its place as soon as the panel sees the connection end.
    const first = open.shift()!
    await first.cancel()
    const again = await tailOnceFreed(a)
    expect(again.status).toBe(200)
    await Promise.all(open.splice(0).map((r) => r.cancel()))
  })

  it('per panel: past 64 tails, any session gets a 429 naming the panel-wide limit', async () => {
    // 16 sessions of 4 fill the panel (the previous test's tails are freed as their connections end).
    const sessions: string[] = []
    for (let i = 0; i < 17; i++) sessions.push(await panel.login())
    for (const cookie of sessions.slice(0, 16)) {
      for (let i = 0; i < 4; i++) {
        const res = await tailOnceFreed(cookie)
        expect(res.status).toBe(200)
      }
    }
    const past = await tail(sessions[16]!)
    expect(past.status).toBe(429)
    expect(past.json.error).toBe(
      'the panel already serves 64 live log tails, the most it holds at once: close live-log tabs or scripts that follow /api/logs/tail, then try again',
    )
  })
})
