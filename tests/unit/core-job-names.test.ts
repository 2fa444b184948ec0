import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { LOOPS, TASKS } from '../../server/utils/core/job-names'
import config from '../../nitro.config'

// The typed list of background job names against what nitro derives them from: a task's name is
// its file's path under server/tasks. A name without its file would be a task runTask cannot find.
const tasksDir = join(import.meta.dirname, '../../server/tasks')
const taskFiles = readdirSync(tasksDir, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts'))
  .map((f) => f.replace(/\.ts$/, '').replaceAll('/', ':'))

describe('background job names', () => {
  it('every task file is in TASKS, and every TASKS name but the boot push has its file', () => {
    const named = Object.values(TASKS).filter((n) => n !== TASKS.proxyBootPush)
    expect([...named].sort()).toEqual([...taskFiles].sort())
    for (const n of named) expect(existsSync(join(tasksDir, `${n.replace(':', '/')}.ts`))).toBe(true)
  })

  it('the schedule names only tasks of the list', () => {
    const scheduled = Object.values(config.scheduledTasks ?? {}).flat()
    expect(scheduled.length).toBeGreaterThan(0)
    for (const n of scheduled) expect(Object.values(TASKS)).toContain(n)
  })

  it('no name is both a task and a loop', () => {
    const loops = Object.values(LOOPS) as string[]
    for (const n of Object.values(TASKS)) expect(loops).not.toContain(n)
  })
})
