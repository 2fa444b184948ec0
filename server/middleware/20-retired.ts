import { defineEventHandler } from 'h3'
import { pathNotFound } from '../utils/core/errors'

// Interfaces the spec retired (Versioning 3) answer 404 with what replaced them,
// even where a newer route shares their path shape (and would answer 405).
const _RETIRED: Array<{ method?: string; path: RegExp; instead: string }> = [
  { path: /^\/api\/threats(\/|$)/, instead: 'the /api/security/* routes' },
  { method: 'POST', path: /^\/api\/security\/countries\/expand$/, instead: 'POST /api/security/countries/{cc}/expand' },
  { path: /^\/api\/security\/(scenarios|appsec-tuning)\/mark-applied$/, instead: 'nothing: changes apply when saved' },
]

export default defineEventHandler((event) => {
  const path = event.path.split('?')[0]!
  const hit = _RETIRED.find((r) => r.path.test(path) && (!r.method || r.method === event.method))
  if (hit) throw pathNotFound(`${event.method} ${path} was removed; use ${hit.instead}`)
})
