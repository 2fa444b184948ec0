import { defineEventHandler } from 'h3'
import { vapidPublicKey } from '~/server/utils/ops/notify/push'

export default defineEventHandler(() => vapidPublicKey())
