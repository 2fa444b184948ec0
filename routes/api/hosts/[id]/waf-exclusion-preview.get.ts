import { defineEventHandler, getQuery, getRouterParam } from 'h3'
import { parseIdParam, parseWith } from '~/server/utils/core/validate'
import { wafExclusionPreviewQuery } from '~/server/utils/hosts/schemas'
import { previewWafExclusionSet } from '~/server/utils/hosts/waf-unblock'

// What a set of exclusions would have let through among the host's stored WAF rows; changes nothing.
export default defineEventHandler(async (event) => {
  const hostId = parseIdParam(getRouterParam(event, 'id'), 'host id')
  const q = parseWith(wafExclusionPreviewQuery, getQuery(event), 'query')
  const ruleIds = [...new Set(q.rule_ids.split(',').map(Number))]
  const path = q.path ?? null
  return { host_id: hostId, rule_ids: ruleIds, path, ...(await previewWafExclusionSet(hostId, ruleIds, path)) }
})
