import { defineEventHandler } from 'h3'
import { listAccessLists } from '~/server/utils/hosts/access-lists'

export default defineEventHandler(() => listAccessLists())
