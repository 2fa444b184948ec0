import { defineEventHandler } from 'h3'
import { listEngineMachines } from '~/server/utils/security/engine-agents'

export default defineEventHandler(() => listEngineMachines())
