import { defineEventHandler } from 'h3'
import { finishForwardAuthExchange } from '~/server/utils/auth/forward-credentials'

// Strict session mode: the proxy hands a protected host's /.panel-auth/callback here; the code becomes the host's credential (docs/auth.md).
export default defineEventHandler((event) => finishForwardAuthExchange(event))
