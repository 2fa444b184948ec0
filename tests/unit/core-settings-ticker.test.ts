import { describe, expect, it } from 'vitest'
import { validateSettingsPatch } from '../../server/utils/core/settings'
import { parseGoDurationMs } from '../../server/utils/core/validate'

// security_engine.ticker_interval is the bouncer's poll period. The bouncer
// refuses 0s when it starts (the whole /load fails) and takes 1ms as a thousand
// pulls a second; the panel accepts 1s to 10m.

describe('parseGoDurationMs', () => {
  it.each([
    ['15s', 15_000],
    ['1m30s', 90_000],
    ['1.5h', 5_400_000],
    ['500ms', 500],
    ['1000000us', 1000],
    ['2h45m', 9_900_000],
    ['0s', 0],
  ])('%s = %d ms', (text, ms) => {
    expect(parseGoDurationMs(text)).toBe(ms)
  })
  it.each(['', '15', '10 seconds', '1d', 's', '1.s', '1s-1s'])('%j is not a Go duration', (text) => {
    expect(parseGoDurationMs(text)).toBeNull()
  })
  it('reads a leading sign as Go does (the local API words an expired decision "-1s"); the setting refuses it', () => {
    expect(parseGoDurationMs('-1s')).toBe(-1000)
    expect(() => validateSettingsPatch({ 'security_engine.ticker_interval': '-1s' })).toThrow(/security_engine\.ticker_interval/)
  })
})

describe('security_engine.ticker_interval bounds', () => {
  it.each(['1s', '15s', '1000ms', '10m', '9m59s', '0.5m'])('accepts %s', (value) => {
    expect(validateSettingsPatch({ 'security_engine.ticker_interval': value })).toEqual({ 'security_engine.ticker_interval': value })
  })
  it.each(['0s', '1ms', '999ms', '10m1s', '11m', '1h'])('refuses %s, naming the bounds', (value) => {
    expect(() => validateSettingsPatch({ 'security_engine.ticker_interval': value })).toThrow(
      /^security_engine\.ticker_interval: must be from 1s to 10m/,
    )
  })
  it('still names the format for a value that is not a duration', () => {
    expect(() => validateSettingsPatch({ 'security_engine.ticker_interval': '10 seconds' })).toThrow(/must be a Go duration such as 15s/)
  })
})
