import type { H3Event } from 'h3'
import { assertUploadFromPanelClient } from '../auth/access'
import { readBoundedMultipart } from '../core/body'
import { badRequest, payloadTooLarge } from '../core/errors'
import { NPM_DATABASE_LIMIT_BYTES } from './npm-limits'

/** The multipart upload of POST /api/import/npm: `database` (the file) and `apply` ("true" or "false", default false). */
export async function readNpmUpload(event: H3Event): Promise<{ database: Buffer; apply: boolean }> {
  assertUploadFromPanelClient(event)
  // A body past the limit is a 413 (counted while it arrives); a malformed one is the 400 below.
  const parts = await readBoundedMultipart(event).catch((err) => {
    if (err?.statusCode === 413) throw err
    return null
  })
  if (!parts?.length)
    throw badRequest(
      "send multipart/form-data with the part database (nginx-proxy-manager's data/database.sqlite) and optionally apply=true",
    )
  let database: Buffer | null = null
  let apply = false
  for (const part of parts) {
    if (part.name === 'database') database = part.data
    else if (part.name === 'apply') {
      const value = part.data.toString('utf8')
      if (value !== 'true' && value !== 'false') throw badRequest('apply: must be "true" or "false"')
      apply = value === 'true'
    } else throw badRequest(`unknown part "${part.name}"; send database and optionally apply`)
  }
  if (!database) throw badRequest('database: is required')
  if (database.length > NPM_DATABASE_LIMIT_BYTES) throw payloadTooLarge(NPM_DATABASE_LIMIT_BYTES)
  return { database, apply }
}
