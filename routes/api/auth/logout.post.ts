import { defineEventHandler, sendNoContent } from 'h3'
import { writeTransaction } from '~/server/utils/core/db'
import { auditContextOf, writeAudit } from '~/server/utils/core/audit'
import { deleteSessionByToken } from '~/server/utils/auth/sessions'
import { clearSessionCookie, readSessionCookie } from '~/server/utils/auth/cookie'

export default defineEventHandler(async (event) => {
  const token = readSessionCookie(event)!
  await writeTransaction(async (tx) => {
    await deleteSessionByToken(tx, token)
    await writeAudit(auditContextOf(event), 'logout', {}, tx)
  })
  clearSessionCookie(event)
  return sendNoContent(event)
})
