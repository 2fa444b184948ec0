import { defineEventHandler } from 'h3'
import { listUsers } from '~/server/utils/auth/users'

export default defineEventHandler(() => listUsers())
