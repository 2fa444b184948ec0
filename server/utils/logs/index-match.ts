import { sql } from 'drizzle-orm'
import type { CompiledFilter } from './filters'
import type { RunQuery } from './read'
import { PATH_INDEX, TEXT_INDEX } from './rollup'

// Which trigram index narrows a filter's rows, and its MATCH expression. Both
// indexes are contentless FTS5 trigram tables with detail=none: they give a
// superset of the rows holding a substring, and the filter's own condition
// keeps the exact ones. Stats, timeseries and the newest-first scan use them.

/** The smallest trigram index query: a substring shorter than a trigram cannot use it. */
const _TRIGRAM = 3
/** Trigrams of a substring used in the index query, and the newest ids each one is counted over to find the rarest. */
const _GRAMS_USED = 2
const _SAMPLE_IDS = 20_000
/** A further trigram is ANDed only when it is at most this many times as common as the rarest (in the sample). */
const _COMMONER_AT_MOST = 4

/** Ids at or below a mark are in that index: the path index's is the roll-up's, the free-text index has its own. */
export interface IndexMarks {
  lastId: number
  textLastId: number
}

/** The distinct trigrams of a substring, as the tokenizer cuts them (code points, not UTF-16 units). */
export function trigramsOf(substring: string): string[] {
  const chars = Array.from(substring)
  const grams = new Set<string>()
  for (let i = 0; i + _TRIGRAM <= chars.length; i++) grams.add(chars.slice(i, i + _TRIGRAM).join(''))
  return [...grams]
}
const _term = (gram: string) => `"${gram.replaceAll('"', '""')}"`

/** A trigram index query: the index, its MATCH expression, and the mark at or below which it holds every row. */
export interface IndexMatch {
  table: string
  match: string
  mark: number
}

/**
 * The MATCH expression for a substring: its rarest trigrams, ANDed. With
 * detail=none an index keeps no positions, so any trigrams of the substring
 * give a superset of the rows that hold it, and the filter's instr() keeps
 * the exact ones. A common trigram ("/ap") lists almost every row and costs
 * as much to read as a scan, and the index keeps no term frequencies: each
 * trigram is counted over the newest ids below the mark only, and the rarest
 * are used (the second only when it is rare too). Null when the substring is
 * shorter than a trigram.
 */
async function _trigramMatch(table: string, substring: string, run: RunQuery, mark: number): Promise<string | null> {
  const grams = trigramsOf(substring)
  if (!grams.length) return null
  if (grams.length <= _GRAMS_USED) return grams.map(_term).join(' AND ')
  const counts = await run(
    sql.join(
      grams.map(
        (g, i) =>
          sql`SELECT ${i} AS i, count(*) AS n FROM ${sql.raw(table)} WHERE ${sql.raw(table)} MATCH ${_term(g)} AND rowid > ${sql.raw(String(Math.max(0, mark - _SAMPLE_IDS)))}`,
      ),
      sql` UNION ALL `,
    ),
  ) // a literal: FTS5 ignores a REAL rowid bound (a bound JS number)
  const rarest = counts
    .map((r) => ({ gram: grams[Number(r.i)]!, n: Number(r.n) }))
    .sort((a, b) => a.n - b.n)
    .slice(0, _GRAMS_USED)
  // A second trigram far commoner than the first removes few candidates and costs its whole list.
  const useful = rarest.filter((r, i) => i === 0 || r.n <= _COMMONER_AT_MOST * rarest[0]!.n)
  return useful.map((r) => _term(r.gram)).join(' AND ')
}

/**
 * The index that narrows the filter's rows: the free-text index for a `query`
 * filter (once it holds rows), else the path index for a path substring.
 * Null when neither applies (then the rows are read from the table).
 */
export async function indexMatchOf(f: CompiledFilter, run: RunQuery, marks: IndexMarks): Promise<IndexMatch | null> {
  for (const [table, substring, mark] of [
    [TEXT_INDEX, f.queryText, marks.textLastId],
    [PATH_INDEX, f.pathLiteral, marks.lastId],
  ] as const) {
    if (substring === undefined || mark === 0) continue
    const match = await _trigramMatch(table, substring, run, mark)
    if (match !== null) return { table, match, mark }
  }
  return null
}
