import { defineEventHandler } from 'h3'
import { clientIpOf } from '~/server/utils/core/request'
import { checkSelf } from '~/server/utils/security/overview'

export default defineEventHandler((event) => checkSelf(clientIpOf(event)))
