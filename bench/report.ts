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
