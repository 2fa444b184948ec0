import { appendFileSync } from 'node:fs'
import Ajv2020 from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { buildOpenApiDocument } from '../../server/utils/openapi/document'
import type { ObservedResponse } from './panel'

// The OpenAPI contract check: every answer that PanelHandle.request receives
// from an /api/* path (and /healthz, /auth/forward) is checked against the
// document the panel serves (built from the same registry,
// server/utils/openapi/): the operation must exist, the status must be
// documented (error statuses included: `default` does not count), and a JSON
// body must match the response schema. A mismatch throws, which fails the test
// at the request that got it.
//
// Loaded at the first panel response of a test file (contract-setup.ts). OPENAPI_CONTRACT=0 turns it
// off; OPENAPI_COVERAGE_FILE=<path> appends one JSON line per checked response
// ({method, path, status}) so that `node scripts/openapi-coverage.mjs <path>`
// can list the operations the suite never exercised.

interface CompiledOperation {
  method: string
  template: string
  pattern: RegExp
  staticSegments: number
  responses: Map<string, { validate?: Validator; contentTypes: string[] }>
}
type Validator = ((v: unknown) => boolean) & { errors?: unknown }

let _operations: CompiledOperation[] | undefined
let _validateError: Validator | undefined

/**
 * Read at the first response checked (unit test files never pay for it). Each response
 * schema is compiled when a response first needs it: a file exercises a few operations,
 * and compiling all of them cost about a second per file.
 */
function _compile(): CompiledOperation[] {
  const doc = buildOpenApiDocument()
  const ajv = new (Ajv2020 as any)({ strict: false, allErrors: true })
  ;(addFormats as any)(ajv)
  ajv.addSchema({ $id: 'panel-openapi', components: doc.components })
  const compile = (schema: unknown) =>
    ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"panel-openapi#/components/')))
  _validateError = compile(doc.components.schemas.Error)
  const out: CompiledOperation[] = []
  for (const [template, item] of Object.entries(doc.paths)) {
    const segments = template.split('/')
    const pattern = new RegExp(
      `^${segments.map((s) => (/^\{\w+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/')}$`,
    )
    for (const [method, op] of Object.entries(item as Record<string, any>)) {
      const responses = new Map<string, { validate?: Validator; contentTypes: string[] }>()
      for (const [status, r] of Object.entries(op.responses as Record<string, any>)) {
        const content = (r.content ?? {}) as Record<string, { schema: unknown }>
        const json = content['application/json']
        let compiled: Validator | undefined
        const validate = json
          ? Object.defineProperty((v: unknown) => (compiled ??= compile(json.schema))(v), 'errors', { get: () => compiled?.errors })
          : undefined
        responses.set(status, { validate, contentTypes: Object.keys(content) })
      }
      out.push({
        method: method.toUpperCase(),
        template,
        pattern,
        staticSegments: segments.filter((s) => !s.startsWith('{')).length,
        responses,
      })
    }
  }
  // A static segment wins over a parameter: /api/logs/stats before /api/logs/{id}.
  return out.sort((a, b) => b.staticSegments - a.staticSegments)
}

function _isChecked(path: string): boolean {
  return path.startsWith('/api/') || path === '/healthz' || path === '/auth/forward'
}

function _describeErrors(errors: unknown): string {
  return JSON.stringify(errors, null, 1).slice(0, 2000)
}

/** Throws when the response does not match the document. Exported for the contract's own tests. */
export function checkResponseAgainstDocument(r: ObservedResponse): { template: string | null } {
  const ops = (_operations ??= _compile())
  const path = r.path.split('?')[0]!
  const where = `${r.method} ${path} answered ${r.status}`
  const candidates = ops.filter((o) => o.pattern.test(path))
  const op = candidates.find((o) => o.method === r.method)
  const contentType = (r.headers.get('content-type') ?? '').split(';')[0]!.trim()
  if (!op) {
    // Unknown paths and wrong methods must still answer with the {error} shape.
    if (r.status < 400)
      throw new Error(
        `OpenAPI contract: ${where}, but the document has no ${r.method} operation for this path: add it to server/utils/openapi/areas/`,
      )
    if (!_validateError!(r.json))
      throw new Error(`OpenAPI contract: ${where} with a body that is not {"error": "..."}: ${r.text.slice(0, 300)}`)
    return { template: null }
  }
  // Strict: an error status must be listed too (`default` is there for clients, not an excuse for the server).
  const expected = op.responses.get(String(r.status))
  if (!expected)
    throw new Error(
      `OpenAPI contract: ${where}; the document lists only ${[...op.responses.keys()].filter((k) => k !== 'default').join(', ')} for ${op.method} ${op.template}: list this status in its operation (server/utils/openapi/areas/); body: ${r.text.slice(0, 500)}`,
    )
  if (expected.validate) {
    if (contentType !== 'application/json')
      throw new Error(`OpenAPI contract: ${where} with Content-Type "${contentType}"; the document says application/json`)
    if (!expected.validate(r.json))
      throw new Error(
        `OpenAPI contract: ${where}; the body does not match the documented schema of ${op.method} ${op.template} ${r.status}:\n${_describeErrors(expected.validate.errors)}\nbody: ${r.text.slice(0, 1500)}`,
      )
  } else if (expected.contentTypes.length && !expected.contentTypes.includes(contentType)) {
    throw new Error(
      `OpenAPI contract: ${where} with Content-Type "${contentType}"; the document says ${expected.contentTypes.join(' or ')}`,
    )
  } else if (!expected.contentTypes.length && r.text !== '' && r.status !== 302 && op.template !== '/auth/forward') {
    throw new Error(`OpenAPI contract: ${where} with a body, but the document says none: ${r.text.slice(0, 200)}`)
  }
  return { template: op.template }
}

/** The setup file's observer (contract-setup.ts): the check, and the coverage line when asked for. */
export function checkObservedResponse(r: ObservedResponse): void {
  if (!_isChecked(r.path.split('?')[0]!)) return
  const { template } = checkResponseAgainstDocument(r)
  const coverageFile = process.env.OPENAPI_COVERAGE_FILE
  if (coverageFile && template) appendFileSync(coverageFile, `${JSON.stringify({ method: r.method, path: template, status: r.status })}\n`)
}
