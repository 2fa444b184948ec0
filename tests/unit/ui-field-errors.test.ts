import { describe, expect, it } from 'vitest'
import { decodeJsonBody, parseQueryWith, parseWith } from '../../server/utils/core/validate'
import { targetGroupBody } from '../../server/utils/hosts/schemas'
import { settingsPatchBody } from '../../server/utils/core/settings'
import { parseFieldError } from '../../ui/src/fields'
import { z } from 'zod'

// The server words every validation message "<field path>: <sentence>" (server/utils/core/validate.ts)
// and the UI reads the field back with one function (ui/src/fields.ts, parseFieldError): the
// messages here are the server's own, so a change of form on either side fails.

function messageOf(fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    return (err as Error).message
  }
  throw new Error('expected a refusal')
}

describe('the UI finds the field in the server message', () => {
  it('a nested list field, with its label and 1-based index', () => {
    const text = messageOf(() => parseWith(targetGroupBody, { name: 'g', targets: [{ address: 'no port here' }] }))
    expect(text).toMatch(/^targets\.0\.address: /)
    expect(parseFieldError(text)).toMatchObject({ path: 'targets.0.address', label: 'Target 1 address' })
  })

  it('a dotted settings key', () => {
    const text = messageOf(() => parseWith(settingsPatchBody, { 'logs.retention_days': -1 }))
    expect(parseFieldError(text)).toMatchObject({ path: 'logs.retention_days', label: 'Keep log rows for' })
  })

  it('a refusal of the whole body or query names `body` or `query`, which no form field carries', () => {
    const texts = [
      messageOf(() => decodeJsonBody(Buffer.from('{"a":'))),
      messageOf(() => decodeJsonBody(Buffer.from([0x7b, 0x22, 0x80, 0x22, 0x7d]))),
      messageOf(() => parseWith(z.strictObject({}), { extra: 1 })),
      messageOf(() => parseQueryWith(z.strictObject({}), { extra: '1' })),
    ]
    for (const text of texts) expect(text).toMatch(/^(body|query): \S/)
    expect(texts.map(parseFieldError)).toEqual([null, null, null, null])
  })
})
