#!/usr/bin/env node
// Lint guard (issue 34): no function in server/utils is longer than 100 lines.
// A long function hides several concerns behind one name; the limit keeps each
// one readable and testable. Counts the lines a function spans, from its first
// line to its last, for declarations, methods, arrows and function expressions
// alike (a nested function counts inside its parent too).
// The parser is the Babel parser the Vue compiler already brings in (the
// TypeScript package here is the native compiler, whose AST API is unstable).
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, relative } from 'node:path'

const require = createRequire(import.meta.url)
const { parse } = require('@babel/parser')

const LIMIT = 100
const root = new URL('..', import.meta.url).pathname
const dirs = process.argv.length > 2 ? process.argv.slice(2) : ['server/utils']
const FUNCTION_TYPES = new Set([
  'FunctionDeclaration',
  'FunctionExpression',
  'ArrowFunctionExpression',
  'ObjectMethod',
  'ClassMethod',
  'ClassPrivateMethod',
])

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) yield* files(path)
    else if (name.endsWith('.ts')) yield path
  }
}

function nameOf(node, parent) {
  if (node.id?.name) return node.id.name
  if (node.key) return node.key.name ?? node.key.value ?? '<computed>'
  if (parent?.type === 'VariableDeclarator') return parent.id.name ?? '<pattern>'
  if (parent?.type === 'ObjectProperty') return parent.key.name ?? parent.key.value ?? '<computed>'
  return '<anonymous>'
}

function walk(node, parent, visit) {
  if (!node || typeof node.type !== 'string') return
  visit(node, parent)
  for (const key of Object.keys(node)) {
    if (key === 'loc' || key === 'leadingComments' || key === 'trailingComments') continue
    const child = node[key]
    if (Array.isArray(child)) for (const c of child) walk(c, node, visit)
    else if (child && typeof child === 'object') walk(child, node, visit)
  }
}

const long = []
for (const dir of dirs) {
  for (const file of files(join(root, dir))) {
    const ast = parse(readFileSync(file, 'utf8'), { sourceType: 'module', plugins: ['typescript'] })
    walk(ast.program, null, (node, parent) => {
      if (!FUNCTION_TYPES.has(node.type)) return
      const lines = node.loc.end.line - node.loc.start.line + 1
      if (lines > LIMIT) long.push({ where: `${relative(root, file)}:${node.loc.start.line}`, name: nameOf(node, parent), lines })
    })
  }
}

long.sort((a, b) => b.lines - a.lines)
for (const f of long) console.log(`${f.where} ${f.name} is ${f.lines} lines (limit ${LIMIT}): split it along its seams`)
if (long.length) process.exit(1)
