import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export interface Figure { what: string; value: number; unit: string; budget: string; withinBudget: boolean }

/** Prints one benchmark's figures as a table and keeps them in bench/results/<name>.json. */
export function reportFigures(name: string, figures: Figure[]): void {
  const rows = figures.map((f) => `  ${f.withinBudget ? 'ok  ' : 'OVER'} ${f.what.padEnd(52)} ${String(f.value).padStart(10)} ${f.unit.padEnd(6)} budget ${f.budget}`)
  console.log(`\n== ${name} ==\n${rows.join('\n')}\n`)
  const dir = fileURLToPath(new URL('./results', import.meta.url))
  mkdirSync(dir, { recursive: true })
  writeFileSync(`${dir}/${name}.json`, JSON.stringify({ at: new Date().toISOString(), figures }, null, 2))
}

export interface TableColumn { key: string; label: string; unit?: string }

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
