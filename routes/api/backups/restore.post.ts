import { defineEventHandler } from 'h3'
import { auditContextOf } from '~/server/utils/core/audit'
import { readBackupUpload } from '~/server/utils/ops/backup-upload'
import { restoreUploadedBackup } from '~/server/utils/ops/backups'

// Admin only (its declaration in server/utils/openapi/areas/ops.ts): the file replaces every credential and secret of the panel.
export default defineEventHandler(async (event) => {
  return restoreUploadedBackup(await readBackupUpload(event), auditContextOf(event))
})
