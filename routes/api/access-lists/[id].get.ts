import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { getAccessList } from '~/server/utils/hosts/access-lists'

export default defineEventHandler((event) => getAccessList(parseIdParam(getRouterParam(event, 'id'), 'access list id')))
