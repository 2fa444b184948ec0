import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { nodeBody } from '~/server/utils/proxy/nodes/node-schemas'
import { updateNode } from '~/server/utils/proxy/nodes/nodes'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'node id')
  const body = await readValidatedJson(event, nodeBody)
  return updateNode(id, body, auditContextOf(event))
})
