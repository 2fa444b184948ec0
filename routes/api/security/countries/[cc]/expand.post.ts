import { defineEventHandler, getRouterParam, setResponseStatus } from 'h3'
import { runTask } from 'nitropack/runtime'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { logger } from '~/server/utils/core/log'
import { expandBody, submitExpansion } from '~/server/utils/security/countries'
import { TASKS } from '~/server/utils/core/job-names'

export default defineEventHandler(async (event) => {
  const body = await readValidatedJson(event, expandBody)
  const job = await submitExpansion(getRouterParam(event, 'cc') ?? '', body, auditContextOf(event))
  // The worker runs in the background; the client polls GET /api/security/jobs/{id}.
  runTask(TASKS.countriesExpand).catch((err) => logger.error(`country expansion worker: ${(err as Error).message}`))
  setResponseStatus(event, 202)
  return job
})
