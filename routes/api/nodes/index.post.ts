import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { nodeBody } from '~/server/utils/proxy/nodes/node-schemas'
import { createNode } from '~/server/utils/proxy/nodes/nodes'

export default defineEventHandler(async (event) => {
  const body = await readValidatedJson(event, nodeBody)
  const node = await createNode(body, auditContextOf(event))
  setResponseStatus(event, 201)
  return node
})
