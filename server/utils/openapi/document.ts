import { z, type ZodType } from 'zod'
import { SESSION_COOKIE } from '../auth/sessions'
import { PANEL_VERSION } from '../core/version'
import { bodyLimitFor } from '../core/body'
import { errorSchema, type OperationDoc } from './registry'
import { API_AREAS } from './areas'

// Builds the OpenAPI 3.1 document from the area registries. JSON Schema
// 2020-12 is OpenAPI 3.1's own dialect, so zod's output is used as is (minus
// its $schema key). Request schemas are converted on their input side (fields
// with defaults are optional), response schemas on their output side.

type JsonSchema = Record<string, unknown>

function _sizeText(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes / 1024} KiB`
}

function _jsonSchema(schema: ZodType, io: 'input' | 'output'): JsonSchema {
  const out = z.toJSONSchema(schema, { io, target: 'draft-2020-12', unrepresentable: 'any' }) as JsonSchema
  delete out.$schema
  return _withoutSafeIntegerBounds(out) as JsonSchema
}

/** zod bounds every integer by ±(2^53-1); that says nothing to a reader, so it goes. */
function _withoutSafeIntegerBounds(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(_withoutSafeIntegerBounds)
  if (!v || typeof v !== 'object') return v
  const out: Record<string, unknown> = {}
  for (const [k, x] of Object.entries(v)) {
    if ((k === 'minimum' || k === 'maximum') && Math.abs(x as number) === Number.MAX_SAFE_INTEGER) continue
    out[k] = _withoutSafeIntegerBounds(x)
  }
  return out
}

const _ERROR_REF = { $ref: '#/components/schemas/Error' }
const _ERROR_RESPONSE = {
  description: 'any error: a 4xx/5xx status and `{"error": "..."}`',
  content: { 'application/json': { schema: _ERROR_REF } },
}
// server/utils/auth/access.ts (assertUploadFromPanelClient): what an HTML form cannot send.
const _MULTIPART_NOTE =
  'With the session cookie, send the header `X-Panel-Request: 1` as well (the web UI does; an HTML form cannot, so another page cannot post this); with an API token it is not needed.'

/** Every operation of every area, with its tag. */
export function listOperations(): Array<OperationDoc & { tag: string }> {
  return API_AREAS.flatMap((a) => a.operations.map((o) => ({ ...o, tag: a.tag })))
}

function _security(access: OperationDoc['access']) {
  // Either the cookie or an API token (issue 17); ForwardAuth takes the cookie only.
  return access === 'public' || access === 'proxy' ? [] : [{ panelSession: [] }, { apiToken: [] }]
}

function _parameters(op: OperationDoc): unknown[] {
  const parameters: unknown[] = []
  for (const [name, p] of Object.entries(op.params ?? {}))
    parameters.push({ name, in: 'path', required: true, description: p.description, schema: _jsonSchema(p.schema, 'input') })
  if (op.query) {
    const q = _jsonSchema(op.query, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] }
    for (const [name, schema] of Object.entries(q.properties ?? {})) {
      const { description, ...rest } = schema
      parameters.push({
        name,
        in: 'query',
        required: (q.required ?? []).includes(name),
        ...(description ? { description } : {}),
        schema: rest,
      })
    }
  }
  return parameters
}

function _responses(op: OperationDoc): Record<string, unknown> {
  const responses: Record<string, unknown> = {}
  for (const [status, r] of Object.entries(op.responses)) {
    const isError = Number(status) >= 400
    const content = r.schema
      ? { 'application/json': { schema: _jsonSchema(r.schema, 'output') } }
      : r.contentType
        ? { [r.contentType]: { schema: { type: 'string' } } }
        : isError
          ? { 'application/json': { schema: _ERROR_REF } }
          : undefined
    responses[status] = {
      description: r.description,
      ...(r.headers
        ? { headers: Object.fromEntries(Object.entries(r.headers).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }])) }
        : {}),
      ...(content ? { content } : {}),
    }
  }
  // Input the validation layer refuses (server/utils/core/validate.ts, middleware/30-routes.ts) is a 400 on every
  // operation: even one that takes no input refuses a query parameter it does not declare.
  if (!responses['400'])
    responses['400'] = {
      description: 'invalid input: the message names the field and what to fix',
      content: { 'application/json': { schema: _ERROR_REF } },
    }
  // middleware/30-routes.ts: a request line and headers over 16 KiB, on any path.
  if (!responses['431'])
    responses['431'] = {
      description: 'request line and headers over 16 KiB: shorten the query string or the cookies',
      content: { 'application/json': { schema: _ERROR_REF } },
    }
  // The access layer (middleware/10-auth.ts): no session, a viewer's mutation, a cross-site Origin.
  const needsSession = op.access !== 'public' && op.access !== 'proxy'
  if (needsSession && !responses['401'])
    responses['401'] = { description: 'no valid session: log in first', content: { 'application/json': { schema: _ERROR_REF } } }
  // Invalid API tokens are throttled per source address (server/utils/auth/attempts.ts) before any route runs.
  if (needsSession && !responses['429'])
    responses['429'] = {
      description: 'too many invalid API tokens from this address: wait for Retry-After seconds',
      headers: { 'Retry-After': { description: 'seconds to wait', schema: { type: 'string' } } },
      content: { 'application/json': { schema: _ERROR_REF } },
    }
  if ((op.access === 'admin' || op.method !== 'get') && op.access !== 'proxy' && !responses['403'])
    responses['403'] = {
      description: "a viewer may not do this, or a browser request from a page that is not the panel's own origin",
      content: { 'application/json': { schema: _ERROR_REF } },
    }
  // server/utils/core/validate.ts: a JSON route reads application/json only; no Content-Type is refused too.
  if (op.body && !responses['415'])
    responses['415'] = {
      description: 'the body is not sent as Content-Type: application/json',
      content: { 'application/json': { schema: _ERROR_REF } },
    }
  // server/utils/core/body.ts: counted while the body arrives, declared length or not.
  if ((op.body || op.multipart) && !responses['413'])
    responses['413'] = {
      description: `request body over ${_sizeText(bodyLimitFor(op.path))}`,
      content: { 'application/json': { schema: _ERROR_REF } },
    }
  responses.default = _ERROR_RESPONSE
  return responses
}

function _operationObject(op: OperationDoc & { tag: string }) {
  const parameters = _parameters(op)
  const responses = _responses(op)
  const access = {
    public: 'No session needed.',
    session: 'Needs a session; a viewer or a read-scope API token may call it.',
    browser: 'Needs a browser session (a viewer may call it for their own account); API tokens are refused.',
    own: 'Needs a browser session, or an API token acting as admin; read-scope tokens are refused. A viewer acts on their own tokens only.',
    admin: 'Needs the admin role (an admin session, or an admin-scope API token of an admin).',
    proxy: "Called by the proxy (ForwardAuth); carries the browser's cookies.",
  }[op.access]
  return {
    tags: [op.tag],
    summary: op.summary,
    operationId: `${op.method}${op.path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
    description: [op.description, access, op.multipart ? _MULTIPART_NOTE : undefined].filter(Boolean).join('\n\n'),
    security: _security(op.access),
    // The declaration the access middleware enforces (server/utils/auth/access.ts), machine-readable.
    'x-access': op.access,
    ...(parameters.length ? { parameters } : {}),
    ...(op.body ? { requestBody: { required: true, content: { 'application/json': { schema: _jsonSchema(op.body, 'input') } } } } : {}),
    ...(op.multipart
      ? { requestBody: { required: true, content: { 'multipart/form-data': { schema: _jsonSchema(op.multipart, 'input') } } } }
      : {}),
    responses,
  }
}

/** The whole document (deterministic: areas and operations in declaration order). */
export function buildOpenApiDocument() {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const op of listOperations()) {
    const item = (paths[op.path] ??= {})
    if (item[op.method]) throw new Error(`OpenAPI registry: ${op.method.toUpperCase()} ${op.path} is declared twice`)
    item[op.method] = _operationObject(op)
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Edge panel API',
      version: PANEL_VERSION,
      description:
        'Control panel for a Caddy reverse proxy and a CrowdSec security engine. JSON in and out; every error is `{"error": "<what to fix>"}` with a 4xx/5xx status. ' +
        `Authenticate with POST /api/auth/login; the session travels in the \`${SESSION_COOKIE}\` cookie (scripts send the same cookie), or send an API token (POST /api/tokens) as \`Authorization: Bearer <token>\` on any /api/* route: never in a query string, never on /auth/forward. Mutations with a browser Origin of another site are refused (403).`,
    },
    tags: API_AREAS.map((a) => ({ name: a.tag, description: a.description })),
    components: {
      schemas: { Error: _jsonSchema(errorSchema, 'output') },
      securitySchemes: {
        panelSession: {
          type: 'apiKey',
          in: 'cookie',
          name: SESSION_COOKIE,
          description: 'The session cookie set by POST /api/auth/login or POST /api/setup',
        },
        apiToken: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'ept_<43 characters>',
          description:
            "An API token from POST /api/tokens (shown once). Acts as its owner with its scope (read: GETs only; admin: everything the owner may), never above the owner's current role. Not accepted in a query string or on /auth/forward.",
        },
      },
    },
    security: [{ panelSession: [] }, { apiToken: [] }],
    paths,
  }
}

export type OpenApiDocument = ReturnType<typeof buildOpenApiDocument>
