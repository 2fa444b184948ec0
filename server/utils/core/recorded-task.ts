import { defineTask } from 'nitropack/runtime'
import type { Task, TaskEvent, TaskMeta, TaskResult } from 'nitropack/types'
import { recordRun } from './background'

// Apart from background.ts because it imports nitro's runtime, which only the
// built server can load (server/tasks/* import this file, nothing else does).

/** defineTask whose every run is recorded under the task's name, with what it returned. */
export function defineRecordedTask<R>(def: { meta: TaskMeta; run: (event: TaskEvent) => Promise<R> }): Task<R> {
  return defineTask<R>({
    meta: def.meta,
    run: (event: TaskEvent): Promise<TaskResult<R>> =>
      recordRun(
        event.name,
        'task',
        async () => ({ result: await def.run(event) }),
        (r) => r.result,
      ),
  })
}
