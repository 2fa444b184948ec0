import { describe, expect, it } from 'vitest'
import { HOST_DEFAULTS, hostBody, resolveHostFields } from '../../server/utils/hosts/schemas'
import { hostFromRow, hostToRow, ruleFromRow, ruleToRow } from '../../server/utils/hosts/records'
import { camelCaseKeys, snakeCaseKeys } from '../../server/utils/core/row-keys'

const _stamps = { createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-02T00:00:00.000Z' }

describe('row <-> domain mappers', () => {
  it('maps column names both ways, digits and single words included', () => {
    expect(snakeCaseKeys({ fingerprintSha256: 1, wafBodyLimitKb: 2, id: 3 })).toEqual({
      fingerprint_sha256: 1,
      waf_body_limit_kb: 2,
      id: 3,
    })
    expect(camelCaseKeys({ fingerprint_sha256: 1, waf_body_limit_kb: 2, id: 3 })).toEqual({
      fingerprintSha256: 1,
      wafBodyLimitKb: 2,
      id: 3,
    })
  })

  it('a created host gets every default and reads back unchanged, without timestamps', () => {
    const input = hostBody.parse({ domain: 'App.Example.test', target_group_id: 4, tls_mode: 'auto' })
    const fields = resolveHostFields(input, HOST_DEFAULTS)
    const row = { id: 9, ...hostToRow(fields), ..._stamps }
    expect(row).toMatchObject({
      domain: 'app.example.test',
      targetGroupId: 4,
      enabled: true,
      bouncerEnabled: true,
      wafProfile: 'full',
      wafFamilies: ['sqli', 'xss'],
      tlsChallenge: 'http',
    })
    const host = hostFromRow(row)
    expect(host).toEqual({ id: 9, ...fields })
    expect(host).not.toHaveProperty('created_at')
  })

  it('an update keeps the stored value of every field the request leaves out, and never copies the id', () => {
    const stored = hostFromRow({
      id: 9,
      ...hostToRow(
        resolveHostFields(
          hostBody.parse({
            domain: 'a.example.test',
            target_group_id: 1,
            tls_mode: 'none',
            lan_only: true,
            waf_profile: 'fast',
            waf_body_limit_kb: 64,
          }),
          HOST_DEFAULTS,
        ),
      ),
      ..._stamps,
    })
    const fields = resolveHostFields(
      hostBody.parse({ domain: 'b.example.test', target_group_id: 2, tls_mode: 'none', enabled: false }),
      stored,
    )
    expect(fields).toMatchObject({
      domain: 'b.example.test',
      target_group_id: 2,
      enabled: false,
      lan_only: true,
      waf_profile: 'fast',
      waf_body_limit_kb: 64,
    })
    expect(fields).not.toHaveProperty('id')
  })

  it('the resolved fields share no array with the defaults', () => {
    const fields = resolveHostFields(hostBody.parse({ domain: 'a.example.test', target_group_id: 1, tls_mode: 'none' }), HOST_DEFAULTS)
    fields.waf_families.push('rce')
    expect(HOST_DEFAULTS.waf_families).toEqual(['sqli', 'xss'])
  })

  it('a rule round-trips through its row', () => {
    const rule = {
      priority: 5,
      path: '/x',
      methods: ['GET' as const],
      action: 'redirect' as const,
      target_group_id: null,
      redirect_url: '/y',
      redirect_status: 308 as const,
      respond_status: null,
      respond_body: null,
      header_rules: [],
      geo_policy: null,
    }
    expect(ruleFromRow({ id: 2, hostId: 3, ...ruleToRow(rule), ..._stamps })).toEqual({ id: 2, host_id: 3, ...rule })
  })
})
