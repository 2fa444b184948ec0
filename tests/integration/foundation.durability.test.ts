import { describe, expect, it } from 'vitest'
import { startPanel } from '../support/panel'

describe('durability — killing the process during writes loses no committed row (WAL)', () => {
  it('every user whose creation was answered 201 is there after SIGKILL and restart', async () => {
    const panel = await startPanel()
    const admin = await panel.login()
    const committed: string[] = []
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; ; i++) {
        const email = `u${w}-${i}@example.test`
        let res: Awaited<ReturnType<typeof panel.request>>
        try {
          res = await panel.request('/api/users', {
            method: 'POST',
            cookie: admin,
            body: { email, password: 'long-enough-pass', role: 'viewer' },
          })
        } catch {
          return
        } // the process is gone
        if (res.status === 201) committed.push(email)
      }
    })
    await new Promise((r) => setTimeout(r, 1500))
    await panel.kill('SIGKILL')
    await Promise.all(writers)
    expect(committed.length).toBeGreaterThan(5)

    const again = await startPanel({ dataDir: panel.dataDir })
    try {
      const cookie = await again.login()
      const users = (await again.request('/api/users', { cookie })).json.map((u: any) => u.email)
      for (const email of committed) expect(users).toContain(email)
      const audit = await again.db().execute("SELECT count(*) AS n FROM logs WHERE message = 'user_create'")
      // Audit rows commit with their user: one per committed user, plus at most the one in flight.
      expect(Number(audit.rows[0]!.n)).toBeGreaterThanOrEqual(committed.length)
    } finally {
      await again.stop()
    }
  })
})

describe('a panel whose log reader is gone (standard output and error closed)', () => {
  // Each write then fails with EPIPE; unhandled, Nitro reported each failure on the same closed
  // stream, from one tick to the next: the panel never answered again and ignored SIGTERM.
  it('starts, serves, writes what it logs about, and stops on SIGTERM', async () => {
    const panel = await startPanel({ outputClosed: true })
    try {
      const cookie = await panel.login()
      const auditCount = async () =>
        Number((await panel.db().execute("SELECT count(*) AS n FROM logs WHERE message = 'user_create'")).rows[0]!.n)
      const before = await auditCount()
      // A login the panel refuses, and a user created: the answers and the audit row, without a log to write to.
      expect(
        (await panel.request('/api/auth/login', { method: 'POST', body: { email: 'nobody@example.test', password: 'wrong-password' } }))
          .status,
      ).toBe(401)
      const created = await panel.request('/api/users', {
        method: 'POST',
        cookie,
        body: { email: 'after-the-log@example.test', password: 'long-enough-pass', role: 'viewer' },
      })
      expect(created.status).toBe(201)
      expect(await auditCount()).toBe(before + 1)
    } finally {
      await panel.stop()
    }
    expect(panel.output()).toBe('')
  })
})
