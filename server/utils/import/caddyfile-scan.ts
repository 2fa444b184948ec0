// A small reading of a Caddyfile's structure, for what `caddy adapt` does not
// say: the line each site block and each directive starts on (the adapted JSON
// carries no positions), and whether it imports files. Caddy's own lexer rules
// that matter here: tokens split on whitespace; "..." and `...` quote; # starts
// a comment at the start of a token; `{` ending a line opens a block and `}` on
// its own closes it; `<<MARKER` opens a heredoc up to MARKER.

export interface ScannedDirective {
  name: string
  args: string[]
  line: number
  children: ScannedDirective[]
}
export interface ScannedBlock {
  header: string[]
  line: number
  directives: ScannedDirective[]
}
export interface ScannedCaddyfile {
  /** The global options block, if any (a block with no address, first in the file). */
  global: ScannedBlock | null
  snippets: Map<string, ScannedBlock>
  sites: ScannedBlock[]
  /** `import` lines outside any block. */
  topImports: Array<{ line: number; target: string }>
}

interface _Token {
  text: string
  line: number
  quoted: boolean
}

function _lex(text: string): _Token[][] {
  const lines: _Token[][] = []
  let current: _Token[] = []
  let lineNo = 1
  let i = 0
  const push = (t: _Token) => current.push(t)
  const endLine = () => {
    if (current.length) lines.push(current)
    current = []
  }
  while (i < text.length) {
    const c = text[i]!
    if (c === '\n') {
      endLine()
      lineNo++
      i++
      continue
    }
    if (c === ' ' || c === '\t' || c === '\r') {
      i++
      continue
    }
    if (c === '\\' && text[i + 1] === '\n') {
      lineNo++
      i += 2
      continue
    }
    if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++
      continue
    }
    const start = lineNo
    if (c === '"' || c === '`') {
      let value = ''
      i++
      while (i < text.length && text[i] !== c) {
        if (c === '"' && text[i] === '\\' && i + 1 < text.length) {
          value += text[i + 1]
          i += 2
          continue
        }
        if (text[i] === '\n') lineNo++
        value += text[i++]
      }
      i++
      push({ text: value, line: start, quoted: true })
      continue
    }
    let value = ''
    while (i < text.length && !/[\s]/.test(text[i]!)) value += text[i++]
    const heredoc = /^<<([A-Za-z0-9_]+)$/.exec(value)
    if (heredoc) {
      // The body runs to a line holding only the marker; kept as one quoted token.
      const end = text.indexOf(`\n`, i)
      const rest = end < 0 ? '' : text.slice(end + 1)
      const close = new RegExp(`^[ \\t]*${heredoc[1]}[ \\t]*$`, 'm').exec(rest)
      const body = close ? rest.slice(0, close.index) : rest
      lineNo += (body.match(/\n/g)?.length ?? 0) + 1
      i = close ? end + 1 + close.index + close[0].length : text.length
      push({ text: body, line: start, quoted: true })
      continue
    }
    push({ text: value, line: start, quoted: false })
  }
  endLine()
  return lines
}

/** The structure of a Caddyfile: blocks at the top, directives inside with their lines. */
export function scanCaddyfile(text: string): ScannedCaddyfile {
  const lines = _lex(text)
  const result: ScannedCaddyfile = { global: null, snippets: new Map(), sites: [], topImports: [] }
  const stack: ScannedDirective[][] = []
  let block: ScannedBlock | null = null
  let first = true
  for (const tokens of lines) {
    const last = tokens.at(-1)!
    const opens = !last.quoted && last.text === '{'
    const closes = tokens.length === 1 && !last.quoted && last.text === '}'
    const words = (opens ? tokens.slice(0, -1) : tokens).map((t) => t.text)
    if (!block) {
      if (closes) continue
      if (!opens && words[0] === 'import') {
        result.topImports.push({ line: tokens[0]!.line, target: words[1] ?? '' })
        first = false
        continue
      }
      // A block opening, or a site address without braces (the file's only site: every later line is its).
      block = { header: words, line: tokens[0]!.line, directives: [] }
      if (!words.length && first) result.global = block
      else if (words.length === 1 && /^\(.+\)$/.test(words[0]!)) result.snippets.set(words[0]!.slice(1, -1), block)
      else result.sites.push(block)
      first = false
      stack.push(block.directives)
      continue
    }
    if (closes) {
      stack.pop()
      if (!stack.length) block = null
      continue
    }
    const directive: ScannedDirective = { name: words[0] ?? '', args: words.slice(1), line: tokens[0]!.line, children: [] }
    stack.at(-1)!.push(directive)
    if (opens) stack.push(directive.children)
  }
  return result
}

/** Every directive of a site, nested ones and those a snippet brings in included, with the line they are written on. */
export function flattenDirectives(site: ScannedBlock, snippets: Map<string, ScannedBlock>): ScannedDirective[] {
  const out: ScannedDirective[] = []
  const walk = (list: ScannedDirective[], depth: number) => {
    for (const d of list) {
      if (d.name === 'import' && snippets.has(d.args[0] ?? '') && depth < 10) walk(snippets.get(d.args[0]!)!.directives, depth + 1)
      else {
        out.push(d)
        walk(d.children, depth)
      }
    }
  }
  walk(site.directives, 0)
  return out
}

/** `import` lines that name a file or a glob rather than a snippet of this file (with their lines). */
export function fileImports(scan: ScannedCaddyfile): Array<{ line: number; target: string }> {
  const out = scan.topImports.filter((i) => !scan.snippets.has(i.target))
  const walk = (list: ScannedDirective[]) => {
    for (const d of list) {
      if (d.name === 'import' && !scan.snippets.has(d.args[0] ?? '')) out.push({ line: d.line, target: d.args[0] ?? '' })
      walk(d.children)
    }
  }
  for (const b of [...(scan.global ? [scan.global] : []), ...scan.snippets.values(), ...scan.sites]) {
    walk(b.directives)
  }
  return out
}
