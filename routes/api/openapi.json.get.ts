import { defineEventHandler } from 'h3'
import { buildOpenApiDocument } from '~/server/utils/openapi/document'

let _document: ReturnType<typeof buildOpenApiDocument> | undefined

// The document only changes with the code: built once per process.
export default defineEventHandler(() => (_document ??= buildOpenApiDocument()))
