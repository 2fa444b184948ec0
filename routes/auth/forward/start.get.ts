import { defineEventHandler } from 'h3'
import { startForwardAuthExchange } from '~/server/utils/auth/forward-credentials'

// Strict session mode: the panel mints a protected host's one-time code (docs/auth.md).
export default defineEventHandler((event) => startForwardAuthExchange(event))
