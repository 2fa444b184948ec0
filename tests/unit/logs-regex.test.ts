import { describe, expect, it } from 'vitest'
import { compileSafeRegex, linearEngineAvailable, looksCatastrophic, REGEX_MAX_CHARS, requiredLiteral } from '../../server/utils/logs/regex'
import { cidrTextRange } from '../../server/utils/logs/filters'
import { parseCidr } from '../../server/utils/geo/ip'

describe('compileSafeRegex — client regular expressions cannot stall the panel', () => {
  it('runs on the linear-time engine on this Node', () => {
    expect(linearEngineAvailable()).toBe(true)
    expect(compileSafeRegex('^/api/v[0-9]+/').flags).toContain('l')
  })
  it.each([
    ['(a+)+$', false],
    ['(a|a)*$', true],
    ['((a+)b?)+$', false],
    ['(\\w+\\s?)+$', false],
    ['(.*a){12}$', false],
  ])('%s takes linear time on a hostile input', (p, matches) => {
    // On the backtracking engine these never finish on 100,000 characters (the test's
    // timeout fails it); no wall-clock bound here, so a loaded machine cannot fail it.
    const re = compileSafeRegex(p)
    expect(re.flags).toContain('l')
    expect(re.test(`${'a'.repeat(100_000)}!`)).toBe(matches)
  })
  it.each([
    ['(a)\\1', /cannot be run in linear time/],
    ['(?=a)b', /cannot be run in linear time/],
    ['(', /invalid regular expression/],
    ['[z-a]', /invalid regular expression/],
    ['', /empty/],
    ['a'.repeat(REGEX_MAX_CHARS + 1), /at most 256/],
  ])('%s is refused', (p, message) => {
    expect(() => compileSafeRegex(p)).toThrow(message)
  })
})

describe('looksCatastrophic — the guard used where the linear engine is missing', () => {
  it.each([
    ['(a+)+', true],
    ['(a*)*b', true],
    ['(a|aa)+', true],
    ['((a+)b?)+', true],
    ['(x{1,5}){2,}', true],
    ['(a)\\1', true],
    ['(?<n>a)\\k<n>', true],
    ['^/api/(v1|v2)/items$', false],
    ['(?:abc)+', false],
    ['[(+)]+', false],
    ['a+b*c?', false],
    ['^/static/.*\\.js$', false],
  ])('%s -> %s', (p, expected) => expect(looksCatastrophic(p)).toBe(expected))
})

describe('requiredLiteral — what SQL may pre-filter on', () => {
  it.each([
    ['^/api/v[0-9]+/items$', '/api/v'],
    ['/api/', '/api/'],
    ['^/static/.*\\.js$', '/static/'],
    ['\\.php', '.php'],
    ['ab+c', 'ab'],
    ['abc?d', 'ab'],
    ['abc*', 'ab'],
    ['a{0,3}bcd', 'bcd'],
    ['x{2}yz', 'yz'],
    ['(foo)bar', 'bar'],
    ['foo|bar', ''],
    ['(a|b)c', 'c'],
    ['[abc]+xyz', 'xyz'],
    ['\\d+-\\d+', '-'],
    ['\\x41BC', 'BC'],
    ['\\u0041BC', 'BC'],
    ['\\p{L}+login', 'login'],
    ['.*', ''],
    ['^$', ''],
    ['a.b', 'a'],
    ['/api/v1/items?', '/api/v1/item'],
  ])('%s -> %j', (p, literal) => {
    expect(requiredLiteral(p)).toBe(literal)
    // Whatever it returns must appear in every string the expression matches (spot check on a matching sample).
  })
  it('never claims a literal that a match can lack', () => {
    const samples: Array<[string, string]> = [
      ['ab*c', 'ac'],
      ['a?bc', 'bc'],
      ['x(yz)?w', 'xw'],
      ['(abc){0}d', 'd'],
      ['[/]api', '/api'],
      ['a\\.?b', 'ab'],
    ]
    for (const [p, s] of samples) {
      expect(new RegExp(p).test(s)).toBe(true)
      expect(s.includes(requiredLiteral(p))).toBe(true)
    }
  })
})

describe("cidrTextRange — the SQL range that holds a network's addresses as text", () => {
  it.each([
    ['10.0.0.0/8', ['10.', '10/']],
    ['10.1.0.0/16', ['10.1.', '10.1/']],
    ['10.1.2.0/24', ['10.1.2.', '10.1.2/']],
    ['10.1.2.3/32', ['10.1.2.3', '10.1.2.3\u0001']],
    ['10.16.0.0/12', ['10.', '10/']],
    ['0.0.0.0/0', null],
    ['2001:db8::/32', ['2001:db8:', '2001:db8;']],
    ['2001:db8:0:1::/64', ['2001:db8:', '2001:db8;']],
    ['::/0', null],
    ['fe80::/10', null],
  ])('%s', (cidr, range) => expect(cidrTextRange(parseCidr(cidr))).toEqual(range))
})
