import { defineEventHandler } from 'h3'
import { describeGates } from '~/server/utils/proxy/gates'

export default defineEventHandler(() => describeGates())
