import { setFlagsFromString } from 'node:v8'
import { badRequest } from '../core/errors'

// Regular expressions sent by clients run on the panel's CPU. They are
// compiled with V8's linear-time engine (the `l` flag, enabled here at run
// time): matching time grows with the input only, whatever the pattern, and
// patterns that engine cannot run (back-references, look-ahead) are refused.
// Where the engine is missing (another Node), patterns with nested quantifiers
// and back-references are refused instead. Either way a pattern is at most
// REGEX_MAX_CHARS long.

export const REGEX_MAX_CHARS = 256

let _linear: boolean | undefined

/** Whether V8's linear-time regular expression engine is available (and enabled). */
export function linearEngineAvailable(): boolean {
  if (_linear === undefined) {
    try {
      setFlagsFromString('--enable-experimental-regexp-engine')
      // biome-ignore lint/complexity/useRegexLiterals: the l flag exists only once the flag above is set; a literal would not even parse
      _linear = new RegExp('(a+)+$', 'l').test('aaa')
    } catch {
      _linear = false
    }
  }
  return _linear
}

/** The backtracking-engine fallback: refuse the shapes that can take exponential time. */
export function looksCatastrophic(pattern: string): boolean {
  // A quantified group containing a quantifier or an alternation: (a+)+, (a|a)*, ((a+)b?){2,}.
  let depth = 0
  const inner: boolean[] = []
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!
    if (ch === '\\') {
      if (/[1-9k]/.test(pattern[i + 1] ?? '')) return true
      i++
      continue
    }
    if (ch === '[') {
      while (i < pattern.length && pattern[i] !== ']') {
        if (pattern[i] === '\\') i++
        i++
      }
      continue
    }
    if (ch === '(') {
      depth++
      inner[depth] = false
      continue
    }
    if (ch === ')') {
      const had = inner[depth] ?? false
      depth = Math.max(0, depth - 1)
      if (had && /[*+?{]/.test(pattern[i + 1] ?? '')) return true
      if (had && depth > 0) inner[depth] = true
      continue
    }
    if (depth > 0 && /[*+{|]/.test(ch)) inner[depth] = true
    if (depth > 0 && ch === '?' && pattern[i - 1] !== '(') inner[depth] = true
  }
  return false
}

export function compileSafeRegex(pattern: string, field = 'path'): RegExp {
  if (pattern.length === 0) throw badRequest(`${field}: the regular expression after "re:" is empty`)
  if (pattern.length > REGEX_MAX_CHARS) throw badRequest(`${field}: the regular expression must be at most ${REGEX_MAX_CHARS} characters`)
  if (linearEngineAvailable()) {
    try {
      return new RegExp(pattern, 'l')
    } catch (err) {
      const why = (err as Error).message
      if (/linear time/.test(why))
        throw badRequest(`${field}: the regular expression cannot be run in linear time (back-references and look-ahead are not supported)`)
      throw badRequest(`${field}: invalid regular expression: ${why}`)
    }
  }
  if (looksCatastrophic(pattern))
    throw badRequest(`${field}: nested quantifiers and back-references are refused (they can take exponential time)`)
  try {
    return new RegExp(pattern)
  } catch (err) {
    throw badRequest(`${field}: invalid regular expression: ${(err as Error).message}`)
  }
}

/**
 * The longest run of literal characters every match must contain, or '' when
 * none can be told for sure. Used to narrow rows in SQL (`instr`) before the
 * expression itself runs in JS. Conservative: alternation at the top level,
 * or anything unusual, gives ''.
 */
export function requiredLiteral(pattern: string): string {
  let best = '',
    run = ''
  const close = () => {
    if (run.length > best.length) best = run
    run = ''
  }
  const dropLast = () => {
    run = run.slice(0, -1)
  }
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!
    if (ch === '|') return ''
    if (ch === '\\') {
      const next = pattern[i + 1]
      if (next === undefined) return ''
      i++
      if (/[^A-Za-z0-9]/.test(next)) {
        // An escaped punctuation character is itself, a literal.
        run += next
        i = _afterQuantifier(pattern, i, dropLast, close)
        continue
      }
      close()
      i = _afterEscapeClass(pattern, i, next)
      if (i < 0) return ''
    } else if (ch === '[' || ch === '(') {
      close()
      i = ch === '[' ? _classEnd(pattern, i + 1) : _groupEnd(pattern, i)
      if (i >= pattern.length) return ''
    } else if ('.^$'.includes(ch)) close()
    else if ('*+?{'.includes(ch))
      return '' // a quantifier with nothing before it: leave it to the engine
    else if (')]}'.includes(ch)) return ''
    else {
      run += ch
      i = _afterQuantifier(pattern, i, dropLast, close)
      continue
    }
    // A non-literal atom (class, group, anchor, escape such as \d): skip any quantifier after it.
    i = _afterQuantifier(pattern, i, _nothing, _nothing)
  }
  close()
  return best
}

function _nothing(): void {}

/** The last index of the escape `\<letter>` whose letter is at `i` (\x41, \u{…}, \cA, \p{…}, \k<…>); -1 when unterminated. */
function _afterEscapeClass(p: string, i: number, letter: string): number {
  if (letter === 'x') return i + 2
  if (letter === 'u') return p[i + 1] === '{' ? p.indexOf('}', i) : i + 4
  if (letter === 'c') return i + 1
  if (letter === 'p' || letter === 'P') return p.indexOf('}', i)
  if (letter === 'k') return p.indexOf('>', i)
  return i
}

/** The index of the `]` closing a class whose body starts at `i` (a leading `^` or `]` belongs to it); p.length when none. */
function _classEnd(p: string, i: number): number {
  if (p[i] === '^') i++
  if (p[i] === ']') i++
  return _skipToBracket(p, i)
}

function _skipToBracket(p: string, i: number): number {
  while (i < p.length && p[i] !== ']') {
    if (p[i] === '\\') i++
    i++
  }
  return i
}

/** The index of the `)` closing the group opened at `i`, past escapes and classes; p.length when none. */
function _groupEnd(p: string, i: number): number {
  let depth = 0
  for (; i < p.length; i++) {
    const c = p[i]
    if (c === '\\') {
      i++
      continue
    }
    if (c === '[') {
      i = _skipToBracket(p, i)
      continue
    }
    if (c === '(') depth++
    if (c === ')' && --depth === 0) break
  }
  return i
}

/**
 * After the atom ending at `i`: a quantifier that allows zero repetitions
 * (`*`, `?`, `{0,…}`) makes the atom optional (`dropAtom`); any quantifier ends
 * the literal run (`endRun`). Returns the index of the last character consumed.
 */
function _afterQuantifier(p: string, i: number, dropAtom: () => void, endRun: () => void): number {
  const q = p[i + 1]
  if (q === '*' || q === '?') {
    dropAtom()
    endRun()
    i++
  } else if (q === '+') {
    endRun()
    i++
  } else if (q === '{') {
    const m = /^\{(\d*)(,\d*)?\}/.exec(p.slice(i + 1))
    if (!m) return i
    if (!m[1] || Number(m[1]) === 0) dropAtom()
    endRun()
    i += m[0].length
  } else return i
  if (p[i + 1] === '?') i++ // lazy
  return i
}
