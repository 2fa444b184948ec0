// Which documented operations did the integration suite exercise?
//   OPENAPI_COVERAGE_FILE=/tmp/cov.jsonl SKIP_PANEL_BUILD=1 npx vitest run tests/integration/proxy.
//   node scripts/openapi-coverage.mjs /tmp/cov.jsonl
// The contract check (tests/support/openapi-contract.ts) appends one line per
// checked response; this lists every operation with the statuses seen, and the
// operations never seen.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createJiti } from 'jiti'

const file = process.argv[2] ?? process.env.OPENAPI_COVERAGE_FILE
if (!file) {
  console.error('usage: node scripts/openapi-coverage.mjs <coverage.jsonl>')
  process.exit(2)
}
const root = fileURLToPath(new URL('..', import.meta.url))
const jiti = createJiti(import.meta.url, { alias: { '~': root } })
const { listOperations } = await jiti.import('../server/utils/openapi/document.ts')

const seen = new Map()
for (const line of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
  const { method, path, status } = JSON.parse(line)
  const key = `${method} ${path}`
  if (!seen.has(key)) seen.set(key, new Set())
  seen.get(key).add(status)
}
const ops = listOperations().map((o) => `${o.method.toUpperCase()} ${o.path}`)
const never = ops.filter((k) => !seen.has(k))
for (const k of ops) if (seen.has(k)) console.log(`  ${k.padEnd(52)} ${[...seen.get(k)].sort().join(', ')}`)
console.log(`\n${ops.length - never.length} of ${ops.length} operations exercised; never exercised:`)
for (const k of never) console.log(`  ${k}`)
