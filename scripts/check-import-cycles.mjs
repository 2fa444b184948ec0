#!/usr/bin/env node
// Fails when the server's run-time import graph has a cycle (issue 34): a cycle
// makes the load order decide which module sees the other half-initialised, and
// it ties modules that should not know each other.
//
// Each .ts file under server/ and routes/ goes through esbuild's TypeScript
// transform, the one the server build uses: what it erases (`import type`,
// imports used only as types) is not loaded at run time and does not count; a
// dynamic import() runs after loading and does not count either. The imports
// left are resolved (relative and `~/`) to files of this tree, and each cycle is
// printed (strongly connected components of more than one file, or a file
// importing itself).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { transformSync } from 'esbuild'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const roots = process.argv.slice(2).length ? process.argv.slice(2) : ['server', 'routes']

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) walk(p, out)
    else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) out.push(p)
  }
  return out
}

function resolveSpecifier(from, spec) {
  let base
  if (spec.startsWith('~/')) base = join(root, spec.slice(2))
  else if (spec.startsWith('.')) base = resolve(dirname(from), spec)
  else return null // a package: outside this tree
  for (const candidate of [base, `${base}.ts`, join(base, 'index.ts')])
    if (candidate.endsWith('.ts') && existsSync(candidate) && statSync(candidate).isFile()) return candidate
  return null
}

/** The static imports and re-exports esbuild keeps (its output prints them with double quotes, at a statement's start). */
const _STATIC = /(?:^|\n)\s*(?:import|export)\s*(?:[^"'`;]*?\sfrom\s*)?"([^"]+)"/g

function runTimeSpecifiers(file) {
  const { code } = transformSync(readFileSync(file, 'utf8'), { loader: 'ts', format: 'esm', sourcefile: file })
  return [...code.matchAll(_STATIC)].map((m) => m[1])
}

const files = roots.flatMap((r) => (existsSync(join(root, r)) ? walk(join(root, r), []) : []))
const edges = new Map()
for (const file of files) {
  const targets = new Set()
  for (const spec of runTimeSpecifiers(file)) {
    const target = resolveSpecifier(file, spec)
    if (target) targets.add(target)
  }
  edges.set(file, [...targets])
}

// Tarjan's strongly connected components, iteratively (deep graphs would overflow the stack).
let index = 0
const idx = new Map()
const low = new Map()
const onStack = new Set()
const stack = []
const cycles = []
for (const start of edges.keys()) {
  if (idx.has(start)) continue
  const work = [[start, 0]]
  idx.set(start, index)
  low.set(start, index++)
  stack.push(start)
  onStack.add(start)
  while (work.length) {
    const frame = work[work.length - 1]
    const [v, i] = frame
    const next = edges.get(v) ?? []
    if (i < next.length) {
      frame[1]++
      const w = next[i]
      if (!idx.has(w)) {
        idx.set(w, index)
        low.set(w, index++)
        stack.push(w)
        onStack.add(w)
        work.push([w, 0])
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)))
      continue
    }
    work.pop()
    if (work.length) {
      const parent = work[work.length - 1][0]
      low.set(parent, Math.min(low.get(parent), low.get(v)))
    }
    if (low.get(v) === idx.get(v)) {
      const component = []
      let w
      do {
        w = stack.pop()
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || (edges.get(v) ?? []).includes(v)) cycles.push(component)
    }
  }
}

if (cycles.length) {
  console.error(`run-time import cycles (${cycles.length}); break each one (a type-only import does not count):`)
  for (const component of cycles) {
    const members = new Set(component)
    console.error(`- ${component.length} files:`)
    for (const file of component.sort())
      for (const target of edges.get(file) ?? [])
        if (members.has(target)) console.error(`    ${relative(root, file)} -> ${relative(root, target)}`)
  }
  process.exit(1)
}
console.log(`no run-time import cycle among ${files.length} files`)
