import { defineEventHandler, getRouterParam } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { scenarioPatchBody, setScenarioDisabled } from '~/server/utils/security/scenarios'

export default defineEventHandler(async (event) => {
  // The raw (still encoded) name: the domain function decodes %2F itself.
  const name = getRouterParam(event, 'name') ?? ''
  const { disabled } = await readValidatedJson(event, scenarioPatchBody)
  return setScenarioDisabled(name, disabled, auditContextOf(event))
})
