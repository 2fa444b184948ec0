import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * A ratio against the limit measured in the same run: the panel's figure over what
 * the thing underneath does alone (a bare server, the proxy's /load, the engine's own
 * answer...). `goal` reads like a budget: '>= 0.7', '<= 1.1'.
 */
export interface Ratio {
  value: number
  against: string
  goal: string
}
export interface Figure {
  what: string
  value: number
  unit: string
  budget: string
  withinBudget: boolean
  ratio?: Ratio
}

/** A ratio rounded to two places, with the goal it is read against. */
/** The middle value (the upper one of the two middles for an even count). */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

export function ratioOf(panel: number, limit: number, against: string, goal: string): Ratio {
  return { value: Number((panel / limit).toFixed(2)), against, goal }
}

function _meets(r: Ratio): boolean {
  const m = /^(>=|<=)\s*([\d.]+)$/.exec(r.goal)
  if (!m) return true
  return m[1] === '>=' ? r.value >= Number(m[2]) : r.value <= Number(m[2])
}

/** Prints one benchmark's figures as a table (ratio beside the figure) and keeps them in bench/results/<name>.json. */
export function reportFigures(name: string, figures: Figure[]): void {
  const rows = figures.map((f) => {
    const over = !f.withinBudget || (f.ratio !== undefined && !_meets(f.ratio))
    const ratio = f.ratio ? `  ratio ${f.ratio.value} vs ${f.ratio.against} (goal ${f.ratio.goal})` : ''
    return `  ${over ? 'OVER' : 'ok  '} ${f.what.padEnd(52)} ${String(f.value).padStart(10)} ${f.unit.padEnd(6)} budget ${f.budget}${ratio}`
  })
  console.log(`\n== ${name} ==\n${rows.join('\n')}\n`)
  const dir = fileURLToPath(new URL('./results', import.meta.url))
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    `${dir}/${name}.json`,
    JSON.stringify(
      { at: new Date().toISOString(), figures: figures.map((f) => ({ ...f, ratioMeetsGoal: f.ratio ? _meets(f.ratio) : undefined })) },
      null,
      2,
    ),
  )
}

export interface TableColumn {
  key: string
  label: string
  unit?: string
}

/** Prints a table (one row per case, one column per measure) and keeps it in bench/results/<name>.json. */
export function reportTable(name: string, columns: TableColumn[], rows: Array<Record<string, string | number>>): void {
  const head = columns.map((c) => (c.unit ? `${c.label} (${c.unit})` : c.label))
  const cells = rows.map((r) => columns.map((c) => String(r[c.key] ?? '')))
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)))
  const line = (vals: string[]) => `| ${vals.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join(' | ')} |`
  const sep = `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`
  console.log(`\n== ${name} ==\n${[line(head), sep, ...cells.map(line)].join('\n')}\n`)
  const dir = fileURLToPath(new URL('./results', import.meta.url))
  mkdirSync(dir, { recursive: true })
  writeFileSync(`${dir}/${name}.json`, JSON.stringify({ at: new Date().toISOString(), columns, rows }, null, 2))
}
