import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../support/build'
import { startProxyStack, type ProxyStack } from '../support/proxy-stack'

// Every task and loop of the panel records its runs (core/background.ts), and
// /api/system/health shows them. Against the production Caddy (the reconcile
// loop pushes to it); the engine is absent, so its probe records what it found.

/** Every nitro task the build holds: server/tasks/<group>/<name>.ts is task <group>:<name>. */
function _taskNames(): string[] {
  const dir = join(REPO_ROOT, 'server/tasks')
  return readdirSync(dir)
    .flatMap((group) => readdirSync(join(dir, group)).map((file) => `${group}:${file.replace(/\.ts$/, '')}`))
    .sort()
}

const _LOOPS = ['countries:reconcile', 'logs:ingest', 'proxy:reconcile', 'security:drift', 'security:engine-probe']
/** Run by the panel at boot (the others run on their schedule: every 5 s, daily, monthly). */
const _TASKS_AT_BOOT = ['auth:sweep', 'certs:check-expiry', 'geoip:refresh', 'logs:prune', 'proxy:boot-push']

let stack: ProxyStack
beforeAll(async () => {
  stack = await startProxyStack({ env: { PANEL_COUNTRY_RECONCILE_SECONDS: '1' } })
})
afterAll(async () => {
  await stack?.stop()
})

async function _health(): Promise<Record<string, any>> {
  const res = await stack.panel.request('/api/system/health', { cookie: stack.admin })
  expect(res.status).toBe(200)
  return res.json
}

/** Polls until every loop and boot task has finished one run (the country loop's first comes after 1 s). */
async function _afterFirstRuns(): Promise<Record<string, any>> {
  for (let i = 0; i < 100; i++) {
    const { background } = await _health()
    if ([..._LOOPS, ..._TASKS_AT_BOOT].every((name) => background[name]?.last_end_at)) return background
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`not every loop and boot task ran: ${JSON.stringify((await _health()).background)}`)
}

describe('recorded background runs in /api/system/health', () => {
  it('lists every task of the build and every loop, each with its last run', async () => {
    const background = await _afterFirstRuns()
    for (const name of _taskNames()) expect(background[name], name).toMatchObject({ kind: 'task' })
    for (const name of _LOOPS) {
      const run = background[name]
      expect(run, name).toMatchObject({ kind: 'loop', last_start_at: expect.any(String), last_end_at: expect.any(String) })
      expect(run.runs, name).toBeGreaterThanOrEqual(1)
      expect(run.last_duration_ms, name).toBeGreaterThanOrEqual(0)
      expect(Date.parse(run.last_end_at), name).toBeGreaterThanOrEqual(Date.parse(run.last_start_at))
      // A failed loop says why; one that did not fail has no error.
      if (run.last_status === 'failed') expect(run.last_error, name).toEqual(expect.any(String))
      else expect(run, name).toMatchObject({ last_status: expect.stringMatching(/^(ok|running)$/), last_error: null })
    }
    // The production Caddy answers: the reconcile loop's checks succeed.
    expect(background['proxy:reconcile'].last_status).toMatch(/^(ok|running)$/)
    expect(background['proxy:boot-push']).toMatchObject({ kind: 'task', last_status: 'ok', runs: 1 })
    // The monthly vacuum has not run in this process: listed, never run.
    expect(background['logs:vacuum']).toMatchObject({ last_status: 'never', runs: 0, last_start_at: null })
  })

  it('keeps what the retention sweep and the auth sweep returned', async () => {
    const { background } = await _health()
    expect(background['logs:prune']).toMatchObject({ last_status: 'ok', runs: expect.any(Number), last_error: null })
    expect(background['logs:prune'].last_result).toMatchObject({ removed_by_age: 0, removed_by_count: 0, removed_login_attempts: 0 })
    expect(background['auth:sweep']).toMatchObject({
      last_status: 'ok',
      last_error: null,
      last_result: expect.objectContaining({ expired_sessions: 0 }),
    })
  })

  it('records a failed task with its error: the geolocation download from a URL where nothing listens', async () => {
    const { background } = await _health()
    expect(background['geoip:refresh']).toMatchObject({ kind: 'task', last_status: 'failed', failures: 1, last_result: null })
    expect(background['geoip:refresh'].last_error).toMatch(
      /^geolocation download failed\. Country database: the download from http:\/\/127\.0\.0\.1:1\/country\.mmdb failed \(.+\)\. Check "Country database URL" in Settings -> Geolocation\. AS number database: .+/,
    )
  })

  it('the scheduled backup tick runs on its own (every 5 s) and is recorded', async () => {
    for (let i = 0; i < 60; i++) {
      const { background } = await _health()
      if (background['backups:tick'].runs >= 1) {
        expect(background['backups:tick']).toMatchObject({ last_status: 'ok', last_result: { ran: false } })
        return
      }
      await new Promise((r) => setTimeout(r, 250))
    }
    throw new Error('backups:tick never ran')
  })
})
