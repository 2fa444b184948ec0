import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { buildOpenApiDocument, listOperations } from '~/server/utils/openapi/document'
import { listFileRoutes } from '~/server/utils/openapi/routes'
import { REPO_ROOT } from '../support/build'

// The reference must describe every route file, and nothing else.

describe('OpenAPI document completeness', () => {
  const doc = buildOpenApiDocument()
  const routes = listFileRoutes(join(REPO_ROOT, 'routes'))
  const documented = listOperations()

  it('documents every route file, and every documented operation has a route file', () => {
    const key = (m: string, p: string) => `${m.toUpperCase()} ${p}`
    const routeKeys = new Map(routes.map((r) => [key(r.method, r.path), r.file]))
    const docKeys = new Set(documented.map((o) => key(o.method, o.path)))
    const missing = [...routeKeys].filter(([k]) => !docKeys.has(k)).map(([k, file]) => `  - ${k}   (${file})`)
    const orphans = [...docKeys].filter((k) => !routeKeys.has(k)).map((k) => `  - ${k}`)
    const problems: string[] = []
    if (missing.length)
      problems.push(
        `routes missing from the OpenAPI document (add an operation({...}) entry to the area file under server/utils/openapi/areas/):\n${missing.join('\n')}`,
      )
    if (orphans.length)
      problems.push(`documented operations with no route file (remove the entry, or add the route):\n${orphans.join('\n')}`)
    expect(problems.join('\n\n'), problems.join('\n\n')).toBe('')
  })

  it('declares every path parameter of a path template, and no other', () => {
    const problems: string[] = []
    for (const op of documented) {
      const inPath = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!).sort()
      const declared = Object.keys(op.params ?? {}).sort()
      if (inPath.join() !== declared.join())
        problems.push(`${op.method.toUpperCase()} ${op.path}: path has {${inPath.join(', ')}}, params declare {${declared.join(', ')}}`)
    }
    expect(problems).toEqual([])
  })

  it('is an OpenAPI 3.1 document with the {error} shape, cookie auth and a default error response everywhere', () => {
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.components.schemas.Error).toMatchObject({ type: 'object', required: ['error'], properties: { error: { type: 'string' } } })
    expect(doc.components.securitySchemes.panelSession).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'panel_session' })
    for (const [path, item] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(item as Record<string, any>)) {
        expect(op.responses.default, `${method} ${path}`).toBeDefined()
        expect(
          Object.keys(op.responses).some((s) => /^[23]\d\d$/.test(s)),
          `${method} ${path} documents a success status`,
        ).toBe(true)
      }
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item as Record<string, any>).map((op) => op.operationId))
    expect(new Set(ids).size, 'operationIds are unique').toBe(ids.length)
    // Public routes carry no security requirement; the rest need the session cookie or an API token (Bearer).
    expect((doc.paths['/api/auth/login'] as any).post.security).toEqual([])
    expect((doc.paths['/auth/forward'] as any).get.security).toEqual([])
    expect((doc.paths['/api/hosts'] as any).get.security).toEqual([{ panelSession: [] }, { apiToken: [] }])
    expect(doc.components.securitySchemes.apiToken).toMatchObject({ type: 'http', scheme: 'bearer' })
  })

  it('compiles every schema with ajv (draft 2020-12, as OpenAPI 3.1)', async () => {
    const { default: Ajv2020 } = await import('ajv/dist/2020.js')
    const { default: addFormats } = await import('ajv-formats')
    const ajv = new Ajv2020({ strict: false, allErrors: true })
    ;(addFormats as any)(ajv)
    ajv.addSchema({ $id: 'panel-openapi', components: doc.components })
    const failures: string[] = []
    for (const [path, item] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(item as Record<string, any>)) {
        const schemas = [
          ...Object.values(op.requestBody?.content ?? {}).map((c: any) => c.schema),
          ...Object.values(op.responses).flatMap((r: any) => Object.values(r.content ?? {}).map((c: any) => c.schema)),
          ...(op.parameters ?? []).map((p: any) => p.schema),
        ]
        for (const s of schemas) {
          try {
            ajv.compile(JSON.parse(JSON.stringify(s).replaceAll('"#/components/', '"panel-openapi#/components/')))
          } catch (err) {
            failures.push(`${method} ${path}: ${(err as Error).message}`)
          }
        }
      }
    expect(failures).toEqual([])
  })
})
