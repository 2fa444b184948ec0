import { describe, expect, it } from 'vitest'
import { decodeJsonBody, parseQueryWith, parseWith } from '../../server/utils/core/validate'
import { hostBody, targetGroupBody } from '../../server/utils/hosts/schemas'
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

  it("an item of a geo rule's list, named by its rule; the bracket form of the same path too", () => {
    const text = messageOf(() =>
      parseWith(hostBody.pick({ geo_policy: true }), {
        geo_policy: {
          rules: [
            { action: 'deny', countries: ['CN'] },
            { action: 'allow', cidrs: ['192.0.2.0/24', '300.1.1.1/99'] },
          ],
          default: 'allow',
        },
      }),
    )
    expect(text).toMatch(/^geo_policy\.rules\.1\.cidrs\.1: /)
    expect(parseFieldError(text)).toMatchObject({ path: 'geo_policy.rules.1.cidrs.1', label: 'Geo rule 2 addresses and ranges' })
    // The access-list check of a saved policy words its path with brackets.
    expect(parseFieldError('geo_policy.rules[0].access_list_id: access list 9 does not exist')).toMatchObject({
      path: 'geo_policy.rules.0.access_list_id',
      label: 'Geo rule 1 access list',
    })
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
