import { describe, expect, it } from 'vitest'
import { excludedRuleIds, offerWafExclusionSet, remainingScore } from '../../server/utils/hosts/waf-unblock'

// The walk's request: three SQL injection rules of 5 points each against a threshold of 5.
const hit = (id: number, score: number, severity = 'CRITICAL') => ({ id, severity, score, msg: `rule ${id}` })
const walk = [hit(942100, 5), hit(942190, 5), hit(942270, 5), hit(949110, 0, 'EMERGENCY')]

describe('the set of exclusions offered from a WAF row', () => {
  it('offers every rule when excluding fewer leaves the request at or over the threshold', () => {
    const offer = offerWafExclusionSet(walk, 5, new Set())
    expect(offer).toEqual({
      rule_ids: [942100, 942190, 942270],
      steps: [
        { rule_id: 942100, score: 5, remaining: 10 },
        { rule_id: 942190, score: 5, remaining: 5 },
        { rule_id: 942270, score: 5, remaining: 0 },
      ],
      score: 15,
      unblocks: true,
    })
  })

  it('takes the highest scores first, and only as many rules as bring the score under the threshold', () => {
    const rules = [hit(920350, 3, 'WARNING'), hit(942100, 5), hit(932160, 5), hit(942101, 2, 'NOTICE')]
    // 15 against 10: removing 5 leaves 10 (still blocked), removing 10 leaves 5.
    expect(offerWafExclusionSet(rules, 10, new Set()).rule_ids).toEqual([932160, 942100])
    // 15 against 13: one rule of 5 is enough, where a smaller one would not be.
    expect(offerWafExclusionSet(rules, 13, new Set()).rule_ids).toEqual([932160])
  })

  it('leaves out rules already excluded, and says when the control rules keep the request blocked', () => {
    expect(offerWafExclusionSet(walk, 5, new Set([942100])).rule_ids).toEqual([942190, 942270])
    const refused = offerWafExclusionSet([hit(9990132, 5), hit(942100, 5)], 5, new Set())
    expect(refused.rule_ids).toEqual([942100])
    expect(refused.unblocks).toBe(false)
  })

  it('counts a stored request as passing when its rules left on add up to less than the threshold', () => {
    const exclusions = [
      { ruleId: 942100, path: '/search', argument: null },
      { ruleId: 942190, path: '/api/*', argument: null },
      { ruleId: 942270, path: null, argument: null },
      { ruleId: 942200, path: null, argument: 'q' }, // an argument's exclusion: not knowable from a stored row
    ]
    expect([...excludedRuleIds(exclusions, '/search')].sort()).toEqual([942100, 942270])
    expect([...excludedRuleIds(exclusions, '/api/items')].sort()).toEqual([942190, 942270])
    expect([...excludedRuleIds(exclusions, '/searching')]).toEqual([942270])
    expect(remainingScore(walk, excludedRuleIds(exclusions, '/search'))).toBe(5)
    expect(remainingScore(walk, new Set([942100, 942190, 942270]))).toBe(0)
  })
})
