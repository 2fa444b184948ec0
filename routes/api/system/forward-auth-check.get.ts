import { defineEventHandler } from 'h3'
import { checkForwardAuthReachability } from '~/server/utils/proxy/forward-auth-check'

export default defineEventHandler(() => checkForwardAuthReachability())
