import { afterAll, beforeAll, expect, it } from 'vitest'
import { ADMIN, startPanel, type PanelHandle } from '../tests/support/panel'
import { median, reportFigures } from './report'

// A login for an unknown email, or for an account without a password (OIDC),
// must cost what a wrong password costs (one argon2id check), so that answer
// times do not reveal which accounts exist. Medians of interleaved logins; the
// throttle's rows are cleared between requests so that no 429 short-cuts one.
let panel: PanelHandle
beforeAll(async () => {
  panel = await startPanel()
  await panel.db().execute(`INSERT INTO users (email, name, role, provider, external_id, created_at, updated_at)
    VALUES ('sso-user@example.test', '', 'viewer', 'oidc', 'sub-1', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')`)
})
afterAll(async () => {
  await panel?.stop()
})

it('login answer time: unknown email and password-less account vs wrong password', async () => {
  const cases = {
    wrong_password: { email: ADMIN.email, password: 'not-the-right-password' },
    unknown_email: { email: 'nobody-at-all@example.test', password: 'not-the-right-password' },
    account_without_password: { email: 'sso-user@example.test', password: 'not-the-right-password' },
  }
  const times: Record<string, number[]> = { wrong_password: [], unknown_email: [], account_without_password: [] }
  for (let round = 0; round < 25; round++) {
    for (const [name, body] of Object.entries(cases)) {
      await panel.db().execute('DELETE FROM login_attempts')
      const t0 = performance.now()
      const res = await panel.request('/api/auth/login', { method: 'POST', body })
      times[name]!.push(performance.now() - t0)
      expect(res.status).toBe(401)
    }
  }
  const base = median(times.wrong_password!)
  const figures = Object.entries(times).map(([name, xs]) => {
    const m = median(xs)
    const ratio = m / base
    return {
      what: `median login answer, ${name.replace(/_/g, ' ')}`,
      value: Math.round(m * 10) / 10,
      unit: 'ms',
      budget: 'within 25% of wrong password',
      withinBudget: Math.abs(ratio - 1) <= 0.25,
    }
  })
  reportFigures('auth-login', figures)
})
