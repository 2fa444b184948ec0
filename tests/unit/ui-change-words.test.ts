import { describe, expect, it } from 'vitest'
import { fieldWords, reasonWords } from '../../ui/src/changes'

describe('revision reasons and fields in words', () => {
  it('a settings push names the settings by their labels on the Settings screen', () => {
    expect(reasonWords('settings changed: acme.email, acme.ca_url')).toBe(
      'Settings changed: Default ACME email, Default ACME directory URL',
    )
  })

  it('other reasons, already in words, are kept as written', () => {
    expect(reasonWords('host app.example.test now behind access list "staff"')).toBe('host app.example.test now behind access list "staff"')
    expect(reasonWords(null)).toBe('')
  })

  it('a field without a label is spelled out with its acronyms', () => {
    expect(fieldWords('waf_mode')).toBe('WAF mode')
    expect(fieldWords('revisions.retention_count')).toBe('Configuration revisions kept')
  })
})
