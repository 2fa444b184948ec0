// A reading of a Caddyfile's text as Caddy reads it, for two things `caddy
// adapt` does not give: the line each site block and each directive starts on
// (the adapted JSON carries no positions), and whether adapting it would read
// a file of the panel's machine (fileReadRefusal).
//
// The lexer is a port of Caddy's (caddyconfig/caddyfile/lexer.go, 2.11): tokens
// split on every character Go's unicode.IsSpace accepts (no-break space, U+2028
// and the other Unicode spaces included), only "\n" ends a line, a byte-order
// mark is dropped at the start only, "..." and `...` quote, # starts a comment
// at the start of a token, a backslash escapes a newline (the next line
// continues this one), <<MARKER opens a heredoc that ends at the first MARKER.
// Each step of its loop consumes one character, so it ends on any text.

export interface CaddyToken {
  text: string
  /** The line Caddy gives the token (where it starts). */
  line: number
  /** '' when unquoted, else the quote: '"', '`', or '<' for a heredoc. */
  quote: '' | '"' | '`' | '<'
  /** Where the token starts in the text (UTF-16 offset). */
  offset: number
}
export interface LexedCaddyfile {
  tokens: CaddyToken[]
  /** Every comment as [from, to) offsets, from its # to the end of its line. */
  comments: Array<[number, number]>
  /** Why Caddy's lexer would stop (a malformed heredoc); the tokens are those before. */
  error: string | null
  /** Characters read, end of text included: never more than the text's characters + 1. */
  steps: number
}

// Go's unicode.IsSpace: the Latin-1 spaces, then Unicode's White_Space.
const _SPACES = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009,
  0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
])
/** Whether Caddy's lexer ends a token at this character (Go's unicode.IsSpace). */
export function isCaddySpace(ch: string): boolean {
  return _SPACES.has(ch.codePointAt(0)!)
}

/** Caddy's finalizeHeredoc: the closing marker's indentation is stripped from every line; null when a line lacks it. */
function _finalizeHeredoc(body: string, marker: string): string | null {
  const lastNewline = body.lastIndexOf('\n')
  const lines = body.slice(0, lastNewline + 1).split('\n')
  const padding = body.slice(lastNewline + 1, body.length - marker.length)
  const out: string[] = []
  for (const lineText of lines.slice(0, -1)) {
    if (lineText === '' || lineText === '\r') {
      out.push('\n')
      continue
    }
    if (!lineText.startsWith(padding)) return null
    out.push(`${lineText.slice(padding.length)}\n`.replaceAll('\r', ''))
  }
  const text = out.join('')
  return text.endsWith('\n') ? text.slice(0, -1) : text
}

/** Caddy's prefix table for a heredoc marker: the marker is found incrementally, wherever it appears. */
function _markerPrefixTable(marker: string): number[] {
  const prefix: number[] = new Array(marker.length).fill(0)
  for (let i = 1, m = 0; i < marker.length; i++) {
    while (m > 0 && marker[i] !== marker[m]) m = prefix[m - 1]!
    if (marker[i] === marker[m]) m++
    prefix[i] = m
  }
  return prefix
}

/**
 * What one character does to the token being read: `more` reads on, `token` ends it (the next
 * token starts afresh), `stop` ends the text (or an error stops the lexer as Caddy's does).
 */
type _Step = 'more' | 'token' | 'stop'

/**
 * The lexer's state. The whole-text part (position, line, skipped lines) lives across tokens;
 * the rest is the state of Go's lexer.next(), started afresh for each token by `_startToken`.
 * Each kind of character has its own step, in the order Go's loop tests them.
 */
class _Lexer {
  readonly tokens: CaddyToken[] = []
  readonly comments: Array<[number, number]> = []
  error: string | null = null
  steps = 0
  private readonly chars: string[]
  private readonly offsets: number[]
  private pos: number
  private line = 1
  private skipped = 0
  private val: string[] = []
  private comment = false
  private quoted = false
  private backtick = false
  private inHeredoc = false
  private heredocEscaped = false
  private escaped = false
  private marker = ''
  private prefix: number[] = []
  private matched = 0
  private tokenLine = 1
  private tokenOffset = 0
  private commentStart = 0

  constructor(
    private readonly text: string,
    private readonly legacy: boolean,
  ) {
    this.chars = Array.from(text)
    this.offsets = new Array(this.chars.length)
    for (let i = 0, o = 0; i < this.chars.length; o += this.chars[i]!.length, i++) this.offsets[i] = o
    this.pos = this.chars[0] === '\uFEFF' ? 1 : 0
  }

  run(): void {
    for (;;) {
      this._startToken()
      let step: _Step = 'more'
      while (step === 'more') step = this._step()
      if (step === 'stop') return
    }
  }

  private _startToken(): void {
    this.val = []
    this.comment = false
    this.quoted = false
    this.backtick = false
    this.inHeredoc = false
    this.heredocEscaped = false
    this.escaped = false
    this.marker = ''
    this.prefix = []
    this.matched = 0
    this.tokenLine = this.line
    this.tokenOffset = 0
    this.commentStart = 0
  }

  private _make(quote: CaddyToken['quote']): 'token' {
    this.tokens.push({ text: this.val.join(''), line: this.tokenLine, quote, offset: this.tokenOffset })
    return 'token'
  }

  private _step(): _Step {
    this.steps++
    if (this.pos >= this.chars.length) return this._end()
    const ch = this.chars[this.pos]!
    const at = this.offsets[this.pos]!
    this.pos++
    const v = this.val
    if (
      !this.legacy &&
      !this.quoted &&
      !this.backtick &&
      !this.inHeredoc &&
      !this.heredocEscaped &&
      v.length > 1 &&
      v[0] === '<' &&
      v[1] === '<'
    )
      return this._heredocOpening(ch)
    if (this.inHeredoc) return this._heredocBody(ch)
    if (!this.escaped && (this.legacy || !this.backtick) && ch === '\\') {
      this.escaped = true
      return 'more'
    }
    if (this.quoted || this.backtick) return this._quotedChar(ch)
    if (isCaddySpace(ch)) return this._space(ch, at)
    return this._plain(ch, at)
  }

  private _end(): 'stop' {
    if (this.comment) this.comments.push([this.commentStart, this.text.length])
    if (this.val.length && this.inHeredoc) this.error = `incomplete heredoc <<${this.marker}: its closing marker is missing`
    else if (this.val.length) this._make('')
    return 'stop'
  }

  /** After `<<`: the marker up to the end of its line. */
  private _heredocOpening(ch: string): _Step {
    if (ch === ' ') return this._make('')
    if (ch === '\r') return 'more'
    if (ch !== '\n') {
      this.val.push(ch)
      return 'more'
    }
    this.marker = this.val.slice(2).join('')
    if (!/^[A-Za-z0-9_-]+$/.test(this.marker)) {
      this.error = 'a heredoc marker must be letters, digits, dashes and underscores'
      return 'stop'
    }
    this.prefix = _markerPrefixTable(this.marker)
    this.inHeredoc = true
    this.skipped++
    this.val = []
    return 'more'
  }

  private _heredocBody(ch: string): _Step {
    this.val.push(ch)
    if (ch === '\n') this.skipped++
    while (this.matched > 0 && ch !== this.marker[this.matched]) this.matched = this.prefix[this.matched - 1]!
    if (ch === this.marker[this.matched]) this.matched++
    if (this.matched !== this.marker.length) return 'more'
    const body = _finalizeHeredoc(this.val.join(''), this.marker)
    if (body === null) {
      this.error = `mismatched leading whitespace in heredoc <<${this.marker}`
      return 'stop'
    }
    this.val = [body]
    this.line += this.skipped
    this.skipped = 0
    return this._make('<')
  }

  private _quotedChar(ch: string): _Step {
    if (this.quoted && this.escaped) {
      if (ch !== '"') this.val.push('\\')
      this.escaped = false
    } else if ((this.quoted && ch === '"') || (this.backtick && ch === '`')) return this._make(ch as '"' | '`')
    if (ch === '\n') {
      this.line += 1 + this.skipped
      this.skipped = 0
    }
    this.val.push(ch)
    return 'more'
  }

  private _space(ch: string, at: number): _Step {
    if (ch === '\r') return 'more'
    if (ch === '\n') {
      if (this.escaped) {
        this.skipped++
        this.escaped = false
      } else {
        this.line += 1 + this.skipped
        this.skipped = 0
      }
      if (this.comment) this.comments.push([this.commentStart, at])
      this.comment = false
    }
    return this.val.length ? this._make('') : 'more'
  }

  private _plain(ch: string, at: number): _Step {
    if (ch === '#' && !this.val.length && !this.comment) {
      this.comment = true
      this.commentStart = at
    }
    if (this.comment) return 'more'
    if (!this.val.length) {
      this.tokenLine = this.line
      this.tokenOffset = at
      if (ch === '"') {
        this.quoted = true
        return 'more'
      }
      if (ch === '`') {
        this.backtick = true
        return 'more'
      }
    }
    if (this.escaped) {
      if (ch === '<' && !this.legacy) this.heredocEscaped = true
      else this.val.push('\\')
      this.escaped = false
    }
    this.val.push(ch)
    return 'more'
  }
}

/**
 * Caddy's lexer over the text. `legacy: true` reads it as Caddy 2.6 does
 * (Debian's package): no heredocs, and a backslash escapes inside `...` too.
 */
export function lexCaddyfile(text: string, opts: { legacy?: boolean } = {}): LexedCaddyfile {
  const lexer = new _Lexer(text, !!opts.legacy)
  lexer.run()
  return { tokens: lexer.tokens, comments: lexer.comments, error: lexer.error, steps: lexer.steps }
}

/** Caddy's isNextOnNewLine: a token's lines are its own line plus its line breaks (two more for a heredoc). */
function _endLine(t: CaddyToken): number {
  let breaks = t.quote === '<' ? 2 : 0
  for (let i = t.text.indexOf('\n'); i >= 0; i = t.text.indexOf('\n', i + 1)) breaks++
  return t.line + breaks
}

/** The tokens grouped as Caddy groups them into lines. */
function _logicalLines(tokens: CaddyToken[]): CaddyToken[][] {
  const lines: CaddyToken[][] = []
  let prev: CaddyToken | null = null
  for (const t of tokens) {
    if (!prev || _endLine(prev) < t.line) lines.push([])
    lines.at(-1)!.push(t)
    prev = t
  }
  return lines
}

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
}

/** The structure of a Caddyfile: blocks at the top, directives inside with their lines. */
export function scanCaddyfile(text: string): ScannedCaddyfile {
  const lines = _logicalLines(lexCaddyfile(text).tokens)
  const result: ScannedCaddyfile = { global: null, snippets: new Map(), sites: [] }
  const stack: ScannedDirective[][] = []
  let block: ScannedBlock | null = null
  let first = true
  for (const tokens of lines) {
    const last = tokens.at(-1)!
    const opens = !last.quote && last.text === '{'
    const closes = tokens.length === 1 && !last.quote && last.text === '}'
    const words = (opens ? tokens.slice(0, -1) : tokens).map((t) => t.text)
    if (!block) {
      if (closes) continue
      // A block opening, or a site address without braces (the file's only site: every later line is its).
      block = { header: words, line: tokens[0]!.line, directives: [] }
      if (!words.length && first) result.global = block
      else if (words.length === 1 && /^\(.+\)$/s.test(words[0]!)) result.snippets.set(words[0]!.slice(1, -1), block)
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

export interface FileReadRefusal {
  line: number
  /** For the operator: what is refused and what to write instead. */
  message: string
}

// Text that makes `caddy adapt` read the panel machine's files, or can become
// an import before Caddy parses: {$NAME:default} is replaced in the raw text
// before lexing (so its default can be `import /file`), {args[n]} in a
// snippet's tokens when it is imported (so arguments can assemble one), and
// client_auth's *_file options read their file while adapting. \r is dropped
// inside heredocs, so each is also looked for with the \r removed.
const _SNIPPET_ARGS =
  'snippet arguments ({args[0]}) are not supported, since arguments can assemble an import: write the values into the snippet'
const _REFUSED_TEXT: Array<[string, string]> = [
  [
    '{$',
    'environment placeholders ({$NAME}) are not supported, since Caddy expands them into the text before reading it: write the value itself',
  ],
  ['{env.', 'environment placeholders ({env.NAME}) are not supported: write the value itself'],
  ['{file.', 'file placeholders ({file.path}) read files of the panel machine and are not supported: write the value itself'],
  ['{args[', _SNIPPET_ARGS],
  ['{args.', _SNIPPET_ARGS],
  [
    'trusted_ca_cert_file',
    'trusted_ca_cert_file reads a file of the panel machine while adapting, and client certificates are not imported: remove it',
  ],
  [
    'trusted_leaf_cert_file',
    'trusted_leaf_cert_file reads a file of the panel machine while adapting, and client certificates are not imported: remove it',
  ],
]
// A snippet name that, read as a path, can only name something in the empty
// folder caddy adapt runs in: no separator, no wildcard, not . or ..
const _UNSAFE_IMPORT_NAME = /[/\\"`{}$*?[\]#<]/
// "import" as Caddy can read it: \r dropped in heredocs may sit between its letters.
const _IMPORT_WORD = /i\r*m\r*p\r*o\r*r\r*t/g

function _lineAt(text: string, offset: number): number {
  let line = 1
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) line++
  return line
}

/** Whether [from, to) lies inside one of the sorted ranges. */
function _inside(ranges: Array<[number, number]>, from: number, to: number): boolean {
  let lo = 0
  let hi = ranges.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const [a, b] = ranges[mid]!
    if (a > from) hi = mid - 1
    else if (b < to) lo = mid + 1
    else return true
  }
  return false
}

/** Snippets `(name) {` at the top of the file, with where each is defined. */
function _snippetDefinitions(tokens: CaddyToken[]): Array<{ name: string; offset: number }> {
  const out: Array<{ name: string; offset: number }> = []
  let depth = 0
  for (const l of _logicalLines(tokens)) {
    if (depth === 0 && l.length === 2 && /^\(.+\)$/s.test(l[0]!.text) && l[1]!.text === '{' && !l[1]!.quote)
      out.push({ name: l[0]!.text.slice(1, -1), offset: l[0]!.offset })
    for (const t of l) {
      if (t.quote) continue
      if (t.text === '{') depth++
      else if (t.text === '}') depth = Math.max(0, depth - 1)
    }
  }
  return out
}

/**
 * The first thing in the text that would make `caddy adapt` read a file of the
 * panel's machine, or null. Every occurrence of the word `import` that Caddy
 * could read as a token (quoted, in a heredoc, after an escaped newline, on the
 * line of a `{`...) must name, on the same line, a snippet defined above it;
 * only comments (for Caddy 2.11 and 2.6 alike) are passed over.
 */
export function fileReadRefusal(text: string): FileReadRefusal | null {
  for (const variant of [text, text.replaceAll('\r', '')]) {
    for (const [needle, message] of _REFUSED_TEXT) {
      const at = variant.indexOf(needle)
      if (at >= 0) return { line: _lineAt(variant, at), message }
    }
  }
  const modern = lexCaddyfile(text)
  const legacy = lexCaddyfile(text, { legacy: true })
  // Each name's first definition: an import may name it only after that.
  const snippets = new Map<string, number>()
  for (const d of _snippetDefinitions(modern.tokens)) if (!snippets.has(d.name)) snippets.set(d.name, d.offset)
  for (const m of text.matchAll(_IMPORT_WORD)) {
    const from = m.index
    let j = from + m[0].length
    // Followed by a character that continues a token: a longer word, not `import`.
    const after = text[j]
    if (after !== undefined && !isCaddySpace(after) && after !== '"' && after !== '`' && after !== '\\') continue
    if (_inside(modern.comments, from, j) && _inside(legacy.comments, from, j)) continue
    if (after === '"' || after === '`') j++
    // The next token on the same line: spaces and escaped newlines skipped.
    let target = ''
    for (;;) {
      const c = text[j]
      if (c === undefined || c === '\n') break
      if (c === '\\') {
        let k = j + 1
        while (text[k] === '\r') k++
        if (text[k] === '\n') {
          j = k + 1
          continue
        }
      }
      if (isCaddySpace(c)) {
        j++
        continue
      }
      let end = j
      while (end < text.length && !isCaddySpace(text[end]!)) end++
      target = text.slice(j, end)
      break
    }
    if (!target)
      return {
        line: _lineAt(text, from),
        message:
          'the word import must be followed on its line by the name of a snippet defined above it, wherever it stands (quoted or in a heredoc too, since Caddy can read it as an import): reword it',
      }
    const shown = target.length > 100 ? `${target.slice(0, 100)}…` : target
    if (
      _UNSAFE_IMPORT_NAME.test(target) ||
      target === '.' ||
      target === '..' ||
      !((snippets.get(target) ?? Number.POSITIVE_INFINITY) < from)
    )
      return {
        line: _lineAt(text, from),
        message: `import ${shown}: importing files is not supported, only snippets defined above the import; paste the file's contents into the Caddyfile`,
      }
  }
  return null
}
