import { defineEventHandler, getRouterParam } from 'h3'
import { z } from 'zod'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { setScenarioDisabled } from '~/server/utils/security/scenarios'

const body = z.strictObject({ disabled: z.boolean({ message: 'must be true or false' }) })

export default defineEventHandler(async (event) => {
  // The raw (still encoded) name: the domain function decodes %2F itself.
  const name = getRouterParam(event, 'name') ?? ''
  const { disabled } = await readValidatedJson(event, body)
  return setScenarioDisabled(name, disabled, auditContextOf(event))
})
