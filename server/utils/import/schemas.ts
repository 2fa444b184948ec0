import { z } from 'zod'

/** POST /api/import/caddyfile: the file's text; `apply: false` (default) is a dry run. */
export const caddyfileImportBody = z.strictObject({
  caddyfile: z.string({ message: 'must be the Caddyfile as text' }),
  apply: z.boolean({ message: 'must be true or false' }).default(false),
})
