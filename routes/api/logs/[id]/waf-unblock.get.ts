import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { wafUnblockOfLog } from '~/server/utils/hosts/waf-unblock'

// A waf_audit row explained: every matched rule, the score against the threshold, the set that unblocks it.
export default defineEventHandler((event) => wafUnblockOfLog(parseIdParam(getRouterParam(event, 'id'), 'log id')))
