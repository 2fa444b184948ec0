import type { H3Event } from 'h3'
import { assertUploadFromPanelClient } from '../auth/access'
import { readBoundedMultipart } from '../core/body'
import { badRequest } from '../core/errors'

const _SEND = 'send multipart/form-data with one part "backup": the .db.gz file that Download in Backups gives'

/** The multipart upload of POST /api/backups/restore: one part `backup` (the file), within the route's body limit. */
export async function readBackupUpload(event: H3Event): Promise<{ fileName: string; bytes: Buffer }> {
  assertUploadFromPanelClient(event)
  // A body past the limit is a 413 (counted while it arrives); a malformed one is the 400 below.
  const parts = await readBoundedMultipart(event).catch((err) => {
    if (err?.statusCode === 413) throw err
    return null
  })
  if (!parts?.length) throw badRequest(_SEND)
  let file: { fileName: string; bytes: Buffer } | null = null
  for (const part of parts) {
    if (part.name !== 'backup') throw badRequest(`unknown part "${part.name}"; ${_SEND}`)
    // Only for messages and the audit row: never a path.
    const fileName = (part.filename ?? 'backup').replace(/[^\w.\- ]/g, '_').slice(0, 120)
    file = { fileName, bytes: part.data }
  }
  if (!file?.bytes.length) throw badRequest(`backup: the file is empty; ${_SEND}`)
  return file
}
