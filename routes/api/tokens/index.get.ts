import { defineEventHandler, getQuery } from 'h3'
import { requireSession } from '~/server/utils/auth/access'
import { listApiTokensQuery } from '~/server/utils/auth/schemas'
import { listApiTokens } from '~/server/utils/auth/api-tokens'
import { parseWith } from '~/server/utils/core/validate'
import { forbidden } from '~/server/utils/core/errors'

// One's own tokens; `?all=1` lists every user's (admins only).
export default defineEventHandler(async (event) => {
  const { user } = requireSession(event)
  const { all } = parseWith(listApiTokensQuery, getQuery(event), 'query')
  if (all === '1' && user.role !== 'admin') throw forbidden("all=1 lists every user's tokens: this needs the admin role")
  return listApiTokens(all === '1' ? {} : { userId: user.id })
})
