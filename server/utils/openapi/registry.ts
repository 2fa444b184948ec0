import { z, type ZodType } from 'zod'

// The API reference is declared next to nothing but itself: one file per area
// under ./areas lists that area's operations with the zod schemas the routes
// validate with (request side) and schemas of what they answer (response side).
// document.ts turns every declaration into OpenAPI 3.1 with z.toJSONSchema.
//
// Adding a route = adding one `operation({...})` entry to its area file. The
// completeness test (tests/unit/openapi-completeness.test.ts) fails, naming the
// route, until the entry exists.

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete'

/**
 * Who may call it, enforced by server/middleware/10-auth.ts from this declaration alone
 * (server/utils/auth/access.ts, assertDeclaredAccess):
 * - `public`: anyone, no session needed (setup, login, OIDC);
 * - `session`: any session, a viewer or an API token of either scope included (reads only: a
 *   mutation declared `session` is refused when the route table is built);
 * - `browser`: any browser session, a viewer's included, never an API token (the caller's own
 *   second factor and logout: a token ends by being revoked);
 * - `own`: any browser session, or an API token acting as admin; read-scope tokens are refused
 *   (a caller's own API tokens: the domain code narrows a viewer to their own rows and refuses
 *   a token minting a token);
 * - `admin`: the admin role (an admin's browser session, or an admin-scope token of an admin);
 * - `proxy`: called by the proxy (ForwardAuth, outside /api); its own code decides.
 * Finer rules than these stay in the domain code, and the operation's description says so.
 */
export type Access = 'public' | 'session' | 'browser' | 'own' | 'admin' | 'proxy'

export interface ResponseDoc {
  description: string
  /** JSON body schema (output side). Omit for an empty body (204) or a non-JSON body. */
  schema?: ZodType
  /** Media type of a non-JSON body (text/event-stream, application/gzip...). */
  contentType?: string
  /** Response headers worth naming (Set-Cookie, Retry-After, Location...). */
  headers?: Record<string, string>
}

export interface OperationDoc {
  method: HttpMethod
  /** OpenAPI path template: /api/hosts/{id} (Nitro's [id] becomes {id}). */
  path: string
  summary: string
  description?: string
  access: Access
  /** Path parameters, one zod schema per `{name}` of the path. */
  params?: Record<string, { schema: ZodType; description?: string }>
  /** Query parameters as an object schema; each property becomes one parameter. */
  query?: z.ZodObject
  /** JSON request body (input side of the same schema the route validates with). */
  body?: ZodType
  /** A multipart/form-data body instead of JSON (its parts as an object schema). */
  multipart?: z.ZodObject
  /** Documented statuses; every operation also gets `default`: the {error} shape. */
  responses: Record<number, ResponseDoc>
}

/** Identity helper so that area files get type checking and read as a list of declarations. */
export function operation(doc: OperationDoc): OperationDoc {
  return doc
}

// ---- shapes shared by every area ----

/** Every error: `{"error": "<what to fix>"}` (spec, Errors 1). */
export const errorSchema = z.strictObject({ error: z.string().describe('what was wrong, in words an operator can act on') })

/** RFC 3339 timestamps in UTC. */
export const timestamp = () => z.string().describe('RFC 3339 timestamp, UTC')
export const nullableTimestamp = () => z.union([timestamp(), z.null()])

/** A positive integer id as it appears in a path. */
export const idText = () => z.string().regex(/^[1-9]\d{0,15}$/, 'must be a positive integer')
export const idParam = (what: string) => ({ id: { schema: idText(), description: `${what} id (positive integer)` } })

/** What a mutation that reconciles the proxy answers beside the object (docs/api.md). */
export const reconcileSchema = z.strictObject({
  status: z
    .enum(['applied', 'pending'])
    .describe('applied: the proxy holds the new configuration; pending: the proxy was unreachable, the loop retries'),
  error: z.string().optional(),
  warnings: z.array(z.string()).optional(),
})

export const ok = (description: string, schema?: ZodType, extra: Partial<ResponseDoc> = {}): ResponseDoc => ({
  description,
  schema,
  ...extra,
})
export const noContent = (description = 'done; no body'): ResponseDoc => ({ description })
