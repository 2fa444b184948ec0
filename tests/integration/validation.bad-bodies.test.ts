import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN, startPanel, type PanelHandle } from '../support/panel'
import {
  FIELD_ERROR_FORM,
  createFixtures,
  documentedOperations,
  exampleRequests,
  pathOf,
  snapshotStore,
  type ExampleRequest,
} from '../support/openapi-walk'

// Every JSON route of the OpenAPI document gets one bad body of each kind the
// validation layer refuses (server/utils/core/validate.ts), made from the
// route's own schema-valid example so that only the one defect differs: each
// is a 400 naming the problem in the one form "<field path>: <sentence>", and no
// stored object or audit row changes.

let panel: PanelHandle
let cookie: string
let examples: Record<string, ExampleRequest>

beforeAll(async () => {
  panel = await startPanel()
  cookie = await panel.login()
  examples = exampleRequests(await createFixtures(panel, cookie), ADMIN)
})
afterAll(async () => {
  await panel?.stop()
})

const PLACEHOLDER = '\uE000walk\uE000'

/** A copy of `body` whose first string value (depth first) gets `suffix`; a body without one gets the text as a new field. */
function withFirstString(body: unknown, suffix: string): unknown {
  let done = false
  const walk = (v: unknown): unknown => {
    if (done) return v
    if (typeof v === 'string') {
      done = true
      return v + suffix
    }
    if (Array.isArray(v)) return v.map(walk)
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
    return v
  }
  const out = walk(body)
  return done ? out : { ...(out as object), note: `x${suffix}` }
}

/** The JSON text of `body` with the placeholder replaced by bytes that are not UTF-8 (a lone continuation byte and 0xFF). */
function withInvalidUtf8(body: unknown): Buffer {
  const [before, after] = JSON.stringify(withFirstString(body, PLACEHOLDER)).split(PLACEHOLDER)
  return Buffer.concat([Buffer.from(before!), Buffer.from([0x80, 0xff]), Buffer.from(after!)])
}

function withPrototypeKey(body: unknown): string {
  const text = JSON.stringify(body)
  return text === '{}' ? '{"__proto__":{"role":"admin"}}' : `{"__proto__":{"role":"admin"},${text.slice(1)}`
}

const KINDS: Array<[string, (body: unknown) => { raw: string | Buffer }, RegExp]> = [
  ['invalid UTF-8', (b) => ({ raw: withInvalidUtf8(b) }), /not valid UTF-8/],
  ['a NUL in a string', (b) => ({ raw: JSON.stringify(withFirstString(b, '\u0000tail')) }), /must not contain control characters/],
  [
    'a control character (ESC) in a string',
    (b) => ({ raw: JSON.stringify(withFirstString(b, '\u001b[31m')) }),
    /must not contain control characters/,
  ],
  ['a __proto__ key', (b) => ({ raw: withPrototypeKey(b) }), /the key "__proto__" is not allowed/],
  [
    'an unknown field',
    (b) => ({ raw: JSON.stringify({ ...(b as object), walk_unknown_field: true }) }),
    /unknown field "walk_unknown_field"/,
  ],
]

const jsonRoutes = documentedOperations().filter((o) => o.bodySchema)

describe('every JSON route refuses each kind of bad body and changes nothing', () => {
  it('covers the JSON routes of the document', () => {
    expect(jsonRoutes.length).toBeGreaterThanOrEqual(30)
  })

  it.each(jsonRoutes.map((o) => [`${o.method} ${o.template}`, o] as const))('%s', async (key, op) => {
    const ex = examples[key]!
    for (const [kind, make, message] of KINDS) {
      const before = await snapshotStore(panel)
      const res = await panel.request(pathOf(op, ex.params, ex.query), {
        method: op.method,
        cookie: op.public ? undefined : cookie,
        rawBody: make(ex.body).raw,
        headers: { 'content-type': 'application/json' },
      })
      expect(res.status, `${key} with ${kind}: ${res.text.slice(0, 200)}`).toBe(400)
      expect(res.json, `${key} with ${kind}`).toEqual({ error: expect.stringMatching(message) })
      expect(res.json.error, `${key} with ${kind}: not "<field path>: <sentence>"`).toMatch(FIELD_ERROR_FORM)
      expect(await snapshotStore(panel), `${key} with ${kind} changed something`).toBe(before)
    }
  })
})

describe('what used to be stored wrongly', () => {
  it('a NUL inside an email is refused, not cut off', async () => {
    const res = await panel.request('/api/users', {
      method: 'POST',
      cookie,
      body: { email: 'cut@example.tes\u0000t', password: 'cut-password-123', role: 'viewer' },
    })
    expect(res.status).toBe(400)
    expect((await panel.db().execute("SELECT count(*) AS n FROM users WHERE email LIKE 'cut@%'")).rows[0]!.n).toBe(0)
  })

  it('a valid non-ASCII name is stored exactly as sent', async () => {
    const res = await panel.request('/api/users', {
      method: 'POST',
      cookie,
      body: { email: 'zoe@example.test', password: 'zoe-password-1234', name: 'Zoë ☃ 𝄞', role: 'viewer' },
    })
    expect(res.status).toBe(201)
    expect(res.json.name).toBe('Zoë ☃ 𝄞')
    expect((await panel.db().execute({ sql: 'SELECT name FROM users WHERE id = ?', args: [res.json.id] })).rows[0]!.name).toBe('Zoë ☃ 𝄞')
  })

  it('a multi-line field keeps its newline; a single-line one refuses it', async () => {
    const host = (await panel.request('/api/hosts', { cookie })).json[0]
    const rule = await panel.request(`/api/hosts/${host.id}/rules`, {
      method: 'POST',
      cookie,
      body: { path: '/ml', action: 'respond', respond_status: 200, respond_body: 'line 1\n\tline 2' },
    })
    expect(rule.status).toBe(201)
    expect(rule.json.respond_body).toBe('line 1\n\tline 2')
    const group = await panel.request('/api/target-groups', {
      method: 'POST',
      cookie,
      body: { name: 'two\nlines', targets: [{ address: '127.0.0.1:9' }] },
    })
    expect(group.status).toBe(400)
    expect(group.json.error).toMatch(/^name: must not contain control characters/)
  })
})
