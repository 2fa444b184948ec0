import { defineEventHandler } from 'h3'
import { getSetting } from '~/server/utils/core/settings'

export default defineEventHandler(async () => {
  const issuer = await getSetting<string>('oidc.issuer')
  const clientId = await getSetting<string>('oidc.client_id')
  return { local: true, oidc: { enabled: Boolean(issuer && clientId), display_name: await getSetting<string>('oidc.display_name') } }
})
