import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileImports, flattenDirectives, scanCaddyfile } from '../../server/utils/import/caddyfile-scan'

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
    expect(fileImports(scan)).toEqual([])
  })

  it('quotes, comments, heredocs and a site without braces', () => {
    const scan = scanCaddyfile(
      '# a comment {\nexample.com\nrespond "a { quoted" 200 # trailing\nrespond <<EOF\n  two\n  }\n  EOF\nredir /x\n',
    )
    expect(scan.sites).toHaveLength(1)
    expect(scan.sites[0]!.directives.map((d) => [d.line, d.name, d.args])).toEqual([
      [3, 'respond', ['a { quoted', '200']],
      [4, 'respond', ['  two\n  }\n']],
      [8, 'redir', ['/x']],
    ])
  })

  it('names every import of a file or glob, wherever it is, and not snippet imports', () => {
    const scan = scanCaddyfile(
      '(s) {\n  encode\n}\nimport sites/*.caddy\na.example.com {\n  import s\n  handle {\n    import /etc/caddy/extra\n  }\n}\n',
    )
    expect(fileImports(scan)).toEqual([
      { line: 4, target: 'sites/*.caddy' },
      { line: 8, target: '/etc/caddy/extra' },
    ])
  })
})
