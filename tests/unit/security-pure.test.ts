import { describe, expect, it } from 'vitest'
import { parseGoDurationMs } from '../../server/utils/core/validate'
import { deleteDecisionsMatching } from '../../server/utils/security/lapi'
import { parseIpOrCidr, renderWhitelistFile } from '../../server/utils/security/whitelist'
import { renderTrueDetectProfiles, stripPanelBlock } from '../../server/utils/security/profiles'
import { isCoveredBy } from '../../server/utils/security/overview'
import { canonicalFromHubPath, renderDisabledScenariosFile } from '../../server/utils/security/scenarios'
import { insideFolder } from '../../server/utils/security/engine-files'
import { renderAppsecPlugin } from '../../server/utils/security/appsec'

describe('deleteDecisionsMatching — the unfiltered-DELETE guard', () => {
  it.each([[{}], [{ contains: 'false' }], [{ origin: '' }]])('refuses %j before anything is sent', async (filter) => {
    await expect(deleteDecisionsMatching(filter)).rejects.toThrow(/refusing to send an unfiltered DELETE/)
  })
  it('refuses an unknown filter (the engine would answer 500)', async () => {
    await expect(deleteDecisionsMatching({ scope: 'Ip' })).rejects.toThrow(/unknown decision filter scope/)
  })
})

describe('parseGoDurationMs', () => {
  it.each([
    ['3h59m57.5s', (3 * 3600 + 59 * 60 + 57.5) * 1000],
    ['87599h51m50.53s', (87599 * 3600 + 51 * 60 + 50.53) * 1000],
    ['150ms', 150],
    ['-1h', -3600_000],
  ] as const)('%s', (text, ms) => expect(parseGoDurationMs(text)).toBeCloseTo(ms, 3))
  it.each(['soon', '', '4h later'])('%j is not a duration', (text) => expect(parseGoDurationMs(text)).toBeNull())
})

describe('parseIpOrCidr', () => {
  it.each([
    ['192.0.2.7', { value: '192.0.2.7', kind: 'ip' }],
    [' 2001:DB8::1 ', { value: '2001:db8::1', kind: 'ip' }],
    ['198.51.100.0/24', { value: '198.51.100.0/24', kind: 'cidr' }],
    ['2001:db8::/32', { value: '2001:db8::/32', kind: 'cidr' }],
  ])('%s', (raw, expected) => expect(parseIpOrCidr(raw)).toEqual(expected))
  it.each(['300.1.1.1', '10.0.0.0/33', '::/129', '10.0.0.0/8/1', 'a.b.c.d', '10.0.0.0/x'])('refuses %s', (raw) =>
    expect(() => parseIpOrCidr(raw)).toThrow(/value:/),
  )
})

describe('renderWhitelistFile — the engine parser format', () => {
  it('splits addresses and networks, quoting each', () => {
    const text = renderWhitelistFile([{ value: '192.0.2.7' }, { value: '198.51.100.0/24' }, { value: '2001:db8::1' }])
    expect(text).toContain('name: panel/whitelist')
    expect(text).toContain('  ip: ["192.0.2.7", "2001:db8::1"]')
    expect(text).toContain('  cidr: ["198.51.100.0/24"]')
  })

  it('renders nothing for no entries: the engine refuses an empty whitelist node', () => {
    expect(renderWhitelistFile([])).toBeNull()
  })
})

describe('true_detect_mode profiles block', () => {
  it('renders nothing without hosts and round-trips the block out of the file', () => {
    expect(renderTrueDetectProfiles([])).toBe('')
    const block = renderTrueDetectProfiles([{ id: 4, names: ['a.example.test'] }])
    expect(block).toContain('name: panel_true_detect_host_4')
    expect(block).toContain('on_success: break')
    expect(block).not.toContain('decisions:')
    const rest = 'name: default_ip_remediation\nfilters:\n - x\n'
    expect(stripPanelBlock(block + rest)).toBe(rest)
    expect(stripPanelBlock(rest)).toBe(rest)
  })
})

describe('stripPanelBlock — a hand-edited block still comes out whole (the drift detector rewrites it)', () => {
  const block = renderTrueDetectProfiles([
    { id: 4, names: ['a.example.test'] },
    { id: 9, names: ['b.example.test'] },
  ])
  const rest = 'name: default_ip_remediation\nfilters:\n - x\non_success: break\n---\nname: default_range_remediation\nfilters:\n - y\n'
  const [begin, end] = [block.split('\n')[0]!, block.trimEnd().split('\n').at(-1)!]
  it.each([
    ['the END marker deleted', (block + rest).replace(`${end}\n`, '')],
    ['the BEGIN marker deleted', (block + rest).replace(`${begin}\n`, '')],
    [
      'both markers deleted, a filter edited',
      (block + rest).replace(`${begin}\n`, '').replace(`${end}\n`, '').replace('a.example.test', 'evil.example.test'),
    ],
  ])("%s: the operator's profiles are left exactly", (_what, text) => {
    expect(stripPanelBlock(text)).toBe(rest)
  })
  it('leaves a file without any panel profile untouched, byte for byte', () => {
    const odd = '\n# comment\n---\nname: mine\n---\n\n'
    expect(stripPanelBlock(odd)).toBe(odd)
  })
})

describe('renderDisabledScenariosFile — the list the compose stack hands to DISABLE_SCENARIOS', () => {
  it('one name a line, sorted, after comment lines only', () => {
    const text = renderDisabledScenariosFile(['crowdsecurity/http-probing', 'crowdsecurity/http-bad-user-agent'])
    const lines = text.split('\n').filter((l) => l && !l.startsWith('#'))
    expect(lines).toEqual(['crowdsecurity/http-bad-user-agent', 'crowdsecurity/http-probing'])
    expect(
      renderDisabledScenariosFile([])
        .split('\n')
        .filter((l) => l && !l.startsWith('#')),
    ).toEqual([])
  })
})

describe('small helpers', () => {
  it('isCoveredBy compares IPv4 networks and exact addresses', () => {
    expect(isCoveredBy('10.1.2.3', '10.0.0.0/8')).toBe(true)
    expect(isCoveredBy('11.1.2.3', '10.0.0.0/8')).toBe(false)
    expect(isCoveredBy('127.0.0.1', '127.0.0.0/8')).toBe(true)
    expect(isCoveredBy('192.0.2.1', '0.0.0.0/0')).toBe(true)
    expect(isCoveredBy('2001:db8::1', '2001:db8::1')).toBe(true)
  })
  it('canonicalFromHubPath reads author/name from a hub link', () => {
    expect(canonicalFromHubPath('/etc/crowdsec/hub/scenarios/crowdsecurity/http-probing.yaml')).toBe('crowdsecurity/http-probing')
    expect(canonicalFromHubPath('/somewhere/else.yaml')).toBeUndefined()
  })
  it('insideFolder refuses anything outside the folder', () => {
    expect(insideFolder('/etc/crowdsec', 'scenarios', 'x.yaml')).toBe('/etc/crowdsec/scenarios/x.yaml')
    for (const bad of ['../passwd', '/etc/passwd', 'scenarios/../../x', '.'])
      expect(() => insideFolder('/etc/crowdsec', bad)).toThrow(/outside/)
  })
  it('renderAppsecPlugin sets both thresholds with the panel rule id', () => {
    expect(renderAppsecPlugin(7, 3)).toContain(
      'SecAction "id:9990110,phase:1,pass,nolog,setvar:tx.inbound_anomaly_score_threshold=7,setvar:tx.outbound_anomaly_score_threshold=3"',
    )
  })
})
