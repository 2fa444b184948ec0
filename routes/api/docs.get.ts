import { defineEventHandler, setResponseHeader } from 'h3'
import { buildOpenApiDocument } from '~/server/utils/openapi/document'
import { renderReferencePage } from '~/server/utils/openapi/page'

let _page: string | undefined

// Self-contained HTML (no script, no external asset): works offline and under a strict CSP;
// this CSP replaces the one every answer carries, so it repeats its frame-ancestors.
export default defineEventHandler((event) => {
  setResponseHeader(event, 'content-type', 'text/html; charset=utf-8')
  setResponseHeader(event, 'content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
  return (_page ??= renderReferencePage(buildOpenApiDocument()))
})
