import { defineEventHandler } from 'h3'
import { listTargetGroups } from '~/server/utils/hosts/target-groups'

export default defineEventHandler(() => listTargetGroups())
