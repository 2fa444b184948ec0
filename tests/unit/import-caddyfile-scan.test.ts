import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileReadRefusal, flattenDirectives, lexCaddyfile, scanCaddyfile } from '../../server/utils/import/caddyfile-scan'

const FIXTURES = join(import.meta.dirname, '../fixtures/caddyfiles')

describe('scanCaddyfile — blocks and lines', () => {
  it('finds the global options, snippets and sites with the line each directive is on, snippets expanded', () => {
    const scan = scanCaddyfile(readFileSync(join(FIXTURES, 'mixed.Caddyfile'), 'utf8'))
    expect(scan.global?.directives.map((d) => [d.line, d.name])).toEqual([[2, 'email']])
    expect([...scan.snippets.keys()]).toEqual(['common'])
    expect(scan.sites.map((s) => [s.line, s.header])).toEqual([
      [10, ['app.example.com,', 'www.app.example.com']],
      [19, ['api.example.com']],
      [32, ['http://plain.example.com']],
      [37, ['internal.example.com']],
    ])
    expect(flattenDirectives(scan.sites[0]!, scan.snippets).map((d) => `${d.line}:${d.name}`)).toEqual([
      '6:encode',
      '7:header',
      '12:reverse_proxy',
      '13:lb_policy',
      '14:health_uri',
      '15:health_interval',
    ])
    expect(flattenDirectives(scan.sites[1]!, scan.snippets).map((d) => `${d.line}:${d.name}`)).toEqual([
      '20:@v1',
      '21:reverse_proxy',
      '22:handle',
      '23:redir',
      '25:respond',
      '26:basic_auth',
      '27:admin',
      '29:reverse_proxy',
    ])
    expect(fileReadRefusal(readFileSync(join(FIXTURES, 'mixed.Caddyfile'), 'utf8'))).toBeNull()
  })

  it('quotes, comments, heredocs and a site without braces', () => {
    const scan = scanCaddyfile(
      '# a comment {\nexample.com\nrespond "a { quoted" 200 # trailing\nrespond <<EOF\n  two\n  }\n  EOF\nredir /x\n',
    )
    expect(scan.sites).toHaveLength(1)
    expect(scan.sites[0]!.directives.map((d) => [d.line, d.name, d.args])).toEqual([
      [3, 'respond', ['a { quoted', '200']],
      // Caddy strips the closing marker's indentation from every line of the heredoc.
      [4, 'respond', ['two\n}']],
      [8, 'redir', ['/x']],
    ])
  })

  it('splits tokens on every Unicode space Caddy does, drops a leading byte-order mark, and counts lines on \\n only', () => {
    const tokens = lexCaddyfile('\uFEFFa\u00a0b\u2028c\u3000d\n\u200be\u0085f\r\ng').tokens
    expect(tokens.map((t) => [t.text, t.line])).toEqual([
      ['a', 1],
      ['b', 1],
      ['c', 1],
      ['d', 1],
      // U+200B is not a space for Go: it stays in the token.
      ['\u200be', 2],
      ['f', 2],
      ['g', 3],
    ])
  })
})

describe('fileReadRefusal — what would make caddy adapt read a file', () => {
  // Each of these reaches `import <file>` (or another read) in Caddy 2.11 or 2.6.
  const spellings: Array<[string, string, number]> = [
    ['a plain import', 'a.example.test {\n\timport /etc/hostname\n}\n', 2],
    ['an environment default', 'a.example.test {\n\t{$NOPE:import /etc/hostname}\n}\n', 2],
    ['nested environment defaults', 'a.example.test {\n\trespond x\n\t{$A:{$B:import /etc/hostname}}\n}\n', 3],
    ['an {env.} placeholder', 'a.example.test {\n\trespond {env.PANEL_MASTER_KEY}\n}\n', 2],
    ['a {file.} placeholder', 'a.example.test {\n\trespond {file./etc/hostname}\n}\n', 2],
    ['an import on the line of the opening brace', 'a.example.test { import /etc/hostname\n}\n', 1],
    ['a top-level import', 'import /etc/caddy/*.caddy\n', 1],
    ['a glob', 'a.example.test {\n\timport sites/*\n}\n', 2],
    ['a snippet defined after the import', 'a.example.test {\n\timport /etc/hostname\n}\n(/etc/hostname) {\n\trespond x\n}\n', 2],
    ['a snippet name defined later, no slash', 'a.example.test {\n\timport later\n}\n(later) {\n\trespond x\n}\n', 2],
    ['an import after a heredoc closed mid-line', 'a.example.test {\n\trespond <<EOF\n\thi\n\tEOF 200\n\timport /etc/hostname\n}\n', 5],
    ['a heredoc whose body is import', 'a.example.test {\n\t<<EOF\n\timport\n\tEOF /etc/hostname\n}\n', 3],
    ['a heredoc body read as lines by Caddy 2.6', 'a.example.test {\n\trespond <<EOF\n\timport /etc/hostname\n\tEOF\n}\n', 3],
    ['\\r inside a heredoc word', 'a.example.test {\n\t<<EOF\n\timp\rort\n\tEOF /etc/hostname\n}\n', 3],
    ['a quoted import', 'a.example.test {\n\t"import" /etc/hostname\n}\n', 2],
    ['a quoted import glued to its target', 'a.example.test {\n\t"import"/etc/hostname\n}\n', 2],
    ['an escaped newline before the target', 'a.example.test {\n\timport\\\n/etc/hostname\n}\n', 2],
    ['a no-break space before the target', 'a.example.test {\n\u00a0import\u00a0/etc/hostname\n}\n', 2],
    ['U+2028 before the target', 'a.example.test {\n\timport\u2028/etc/hostname\n}\n', 2],
    ['a byte-order mark before a top-level import', '\uFEFFimport /etc/hostname\n', 1],
    [
      'snippet arguments assembling an import',
      '(s) {\n\t{args[0]} {args[1]}\n}\na.example.test {\n\timport s import /etc/hostname\n}\n',
      2,
    ],
    ['a block argument carrying an import', '(s) {\n\t{block}\n}\na.example.test {\n\timport s {\n\t\timport\n\t}\n}\n', 6],
    ['an import inside a nested block', 'a.example.test {\n\thandle {\n\t\troute {\n\t\t\timport /etc/hostname\n\t\t}\n\t}\n}\n', 4],
    ['an import in a named route', '&(r) {\n\timport /etc/hostname\n}\n', 2],
    ['a relative parent', 'a.example.test {\n\timport ..\n}\n', 2],
    [
      'client_auth reading a CA file while adapting',
      'a.example.test {\n\ttls {\n\t\tclient_auth {\n\t\t\ttrusted_ca_cert_file /etc/hostname\n\t\t}\n\t}\n}\n',
      4,
    ],
  ]
  it.each(spellings)('refuses %s, naming its line', (_name, text, line) => {
    const refused = fileReadRefusal(text)
    expect(refused).not.toBeNull()
    expect(refused!.line).toBe(line)
  })

  it('passes snippets defined above, comments that mention import, and words that only contain it', () => {
    expect(
      fileReadRefusal(
        '# import /etc/hostname is how we did it before\n(common) {\n\tencode gzip\n}\na.example.test {\n\timport common # import /x\n\theader X-Important "reimported"\n\treverse_proxy 127.0.0.1:1\n}\n',
      ),
    ).toBeNull()
  })
})

describe('the lexer ends on any text', () => {
  // A seeded PRNG (mulberry32): the same strings on every run.
  function prng(seed: number) {
    return () => {
      seed = (seed + 0x6d2b79f5) | 0
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296
    }
  }
  const PIECES = [
    ...'abcdeEOFimport(){}{}"`\\#$<< \t\n\r'.split(''),
    '\u00a0',
    '\u2028',
    '\u2029',
    '\u0085',
    '\u1680',
    '\u3000',
    '\u202f',
    '\ufeff',
    '\u200b',
    '\ud800',
    '\udc00',
    '😀',
    '<<EOF\n',
    '\nEOF',
    'import ',
    '{$X:',
    '{args[0]}',
    '(s) {\n',
    '\\\n',
  ]

  it('every random string: each step reads one character, and scanning and the refusal check return', () => {
    const random = prng(33)
    for (let n = 0; n < 3000; n++) {
      const parts: string[] = []
      const length = Math.floor(random() * 120)
      for (let i = 0; i < length; i++) parts.push(PIECES[Math.floor(random() * PIECES.length)]!)
      const text = parts.join('')
      for (const legacy of [false, true]) {
        const lexed = lexCaddyfile(text, { legacy })
        // The progress invariant: never more steps than characters, plus the end of the text.
        expect(lexed.steps).toBeLessThanOrEqual(Array.from(text).length + 1)
      }
      expect(scanCaddyfile(text)).toBeDefined()
      expect(fileReadRefusal(text) === null || typeof fileReadRefusal(text)!.line === 'number').toBe(true)
    }
  })
})
