// Copies the panel database to another libSQL database: the embedded file to a
// libSQL server (or back). Stop the panel first, so that nothing writes while
// the copy runs. The target must be empty.
//
//   node scripts/db-copy.mjs --from file:/var/lib/panel/panel.db --to libsql://db.internal:8080 [--to-auth-token <jwt>]
//   (in the panel image: node /app/.output/server/tools/db-copy.mjs ...; TO_AUTH_TOKEN may
//    replace --to-auth-token so that the token stays out of the process list)
//
// Schema first (tables, then indexes and triggers, as sqlite_master holds
// them), then the rows in batches of 500 per transaction, then every table's
// row count is compared. The panel's migration table comes along, so the
// panel started on the target applies no migration twice. A virtual table
// (the FTS5 path index, migration 0022) is created by its own statement, which
// makes its shadow tables; the shadow tables' rows are then copied as they are
// (the index itself), and the virtual table is not read (it is contentless).
import { createClient } from '@libsql/client'

function arg(name) {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1] : undefined
}
const from = arg('from'),
  to = arg('to')
const toAuthToken = arg('to-auth-token') ?? process.env.TO_AUTH_TOKEN
const fromAuthToken = arg('from-auth-token') ?? process.env.FROM_AUTH_TOKEN
if (!from || !to) {
  console.error(
    'usage: node scripts/db-copy.mjs --from <libsql url> --to <libsql url> [--to-auth-token <token>] [--from-auth-token <token>]',
  )
  process.exit(2)
}

const BATCH_ROWS = 500
const source = createClient({ url: from, authToken: fromAuthToken })
const target = createClient({ url: to, authToken: toAuthToken })
const quote = (name) => `"${String(name).replace(/"/g, '""')}"`

try {
  const existing = await target.execute(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_litestream%' AND name NOT LIKE 'libsql_%'",
  )
  if (existing.rows.length)
    throw new Error(`the target already has tables (${existing.rows.map((r) => r.name).join(', ')}): copy into an empty database`)

  const schema = await source.execute(
    "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, rowid",
  )
  const virtual = schema.rows
    .filter((r) => r.type === 'table' && /^CREATE\s+VIRTUAL\s+TABLE/i.test(String(r.sql)))
    .map((r) => String(r.name))
  const isShadow = (name) => virtual.some((v) => name.startsWith(`${v}_`))
  const tables = schema.rows.filter((r) => r.type === 'table' && !virtual.includes(String(r.name))).map((r) => String(r.name))
  // Tables first; indexes and triggers after the rows (faster, and triggers must not fire on the copy).
  await target.batch(
    schema.rows.filter((r) => r.type === 'table' && !isShadow(String(r.name))).map((r) => String(r.sql)),
    'write',
  )
  let copied = 0
  const withoutRowid = new Set(
    schema.rows.filter((r) => r.type === 'table' && /WITHOUT\s+ROWID/i.test(String(r.sql))).map((r) => String(r.name)),
  )
  for (const table of tables) {
    const columns = (await source.execute(`SELECT * FROM ${quote(table)} LIMIT 0`)).columns
    // A shadow table already holds the rows its virtual table's creation wrote (its version): the source's replace them.
    const insert = `INSERT ${isShadow(table) ? 'OR REPLACE ' : ''}INTO ${quote(table)} (${columns.map(quote).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`
    let lastRowid = null,
      offset = 0
    for (;;) {
      // Paged (by rowid, or in primary-key order for WITHOUT ROWID tables) so
      // that a big logs table never sits in memory at once. The panel is stopped:
      // nothing moves between pages.
      const page = withoutRowid.has(table)
        ? await source.execute({ sql: `SELECT * FROM ${quote(table)} LIMIT ${BATCH_ROWS} OFFSET ?`, args: [offset] })
        : await source.execute({
            sql: `SELECT rowid AS __rowid, * FROM ${quote(table)} ${lastRowid === null ? '' : 'WHERE rowid > ?'} ORDER BY rowid LIMIT ${BATCH_ROWS}`,
            args: lastRowid === null ? [] : [lastRowid],
          })
      if (!page.rows.length) break
      await target.batch(
        page.rows.map((row) => ({ sql: insert, args: columns.map((c) => row[c] ?? null) })),
        'write',
      )
      copied += page.rows.length
      offset += page.rows.length
      if (!withoutRowid.has(table)) lastRowid = page.rows.at(-1).__rowid
      if (page.rows.length < BATCH_ROWS) break
    }
  }
  const rest = schema.rows.filter((r) => r.type !== 'table').map((r) => String(r.sql))
  if (rest.length) await target.batch(rest, 'write')

  const mismatched = []
  for (const table of tables) {
    const count = async (c) => Number((await c.execute(`SELECT count(*) AS n FROM ${quote(table)}`)).rows[0].n)
    const [a, b] = [await count(source), await count(target)]
    if (a !== b) mismatched.push(`${table}: ${a} rows in the source, ${b} in the target`)
  }
  if (mismatched.length) throw new Error(`the copy is incomplete:\n  ${mismatched.join('\n  ')}`)
  console.log(`copied ${tables.length} tables, ${copied} rows, ${rest.length} indexes/triggers/views; row counts match`)
} catch (err) {
  console.error(`db-copy: ${err.message}`)
  process.exitCode = 1
} finally {
  source.close()
  target.close()
}
