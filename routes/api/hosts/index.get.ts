import { defineEventHandler } from 'h3'
import { listHosts } from '~/server/utils/hosts/hosts'

export default defineEventHandler(() => listHosts())
