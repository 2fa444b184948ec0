/** Where a backup file is uploaded to be restored, and how large it may be (body.ts reads the limit here, without the backup code). */
export const BACKUP_UPLOAD_PATH = '/api/backups/restore'
/** The gzip as uploaded: a panel database with months of logs compresses to well under this. */
export const BACKUP_UPLOAD_LIMIT_BYTES = 256 * 1024 * 1024
/** The database once unpacked: a gzip bomb stops here instead of filling the disk. */
export const BACKUP_UNPACKED_LIMIT_BYTES = 4 * 1024 * 1024 * 1024
