import { readdirSync } from 'node:fs'
import { join, relative } from 'node:path'

// Nitro's file routes as (method, OpenAPI path) pairs: routes/api/hosts/[id].get.ts
// is GET /api/hosts/{id}; `index` is its folder; [...slug] is a catch-all.
// Used by the completeness test and the coverage report.

export interface FileRoute {
  method: string
  path: string
  file: string
}

const _METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options']

export function routeOfFile(fileFromRoutesDir: string): Omit<FileRoute, 'file'> | null {
  const m = /^(.*)\.(get|post|put|patch|delete|head|options)\.ts$/.exec(fileFromRoutesDir)
  if (!m) return null
  const segments = m[1]!.split('/').filter((s) => s !== 'index')
  const path = `/${segments.map((s) => s.replace(/^\[\.\.\.(\w+)\]$/, '{$1}').replace(/\[(\w+)\]/g, '{$1}')).join('/')}`
  return { method: m[2]!, path: path === '/' ? '/' : path.replace(/\/$/, '') }
}

/** Every routes/**\/*.<method>.ts file; files without a method suffix answer every method and are listed with method "*". */
export function listFileRoutes(routesDir: string): FileRoute[] {
  const out: FileRoute[] = []
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, e.name)
      if (e.isDirectory()) {
        walk(full)
        continue
      }
      if (!e.name.endsWith('.ts')) continue
      const rel = relative(routesDir, full).split('\\').join('/')
      const r = routeOfFile(rel)
      if (r) out.push({ ...r, file: `routes/${rel}` })
      else if (!_METHODS.some((x) => e.name.endsWith(`.${x}.ts`)))
        out.push({ method: '*', path: `/${rel.replace(/\.ts$/, '')}`, file: `routes/${rel}` })
    }
  }
  walk(routesDir)
  return out.sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method))
}
