import { z } from 'zod'

/** Longest operator message on the pages (docs/hosts.md, "Pages"): a short line, not a page of its own. */
export const ERROR_PAGE_MESSAGE_MAX = 200

/** A host's own message on its pages: one line of plain text (escaped by the builder), null for the global one. */
export const errorPageMessageField = z
  .string()
  .trim()
  .max(ERROR_PAGE_MESSAGE_MAX, `must be at most ${ERROR_PAGE_MESSAGE_MAX} characters`)
  .regex(/^[^\u0000-\u001f\u007f]*$/, 'must be one line of text without control characters')
  .transform((s) => s || null)
  .nullable()
  .optional()
