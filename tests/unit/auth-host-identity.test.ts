import { describe, expect, it } from 'vitest'
import { admitsUser, hostEntryRuleFor, type HostEntryRule } from '../../server/utils/auth/host-identity'
import { groupsOfUser } from '../../server/utils/auth/sessions'
import { actorOfUserId } from '../../server/utils/logs/parse'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { buildForwardAuthHeaderStripHandler, FORWARD_AUTH_HEADERS } from '../../server/utils/proxy/build/forward-auth'
import { forwardAuthHeaderValue } from '../../server/utils/auth/forward-auth'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

// Who may enter a protected host (docs/access-control.md): the decision /auth/forward takes.

const rule = (users: number[], groups: string[], domain = 'team.example.test'): HostEntryRule => ({
  hostId: 1,
  domain,
  users: new Set(users),
  groups: new Set(groups),
})

describe('admitsUser', () => {
  it('no rule (both lists empty): any signed-in user', () => {
    expect(admitsUser(null, 7, [])).toBe(true)
    expect(admitsUser(null, 7, undefined)).toBe(true)
  })

  it('a listed user enters whatever their groups', () => {
    expect(admitsUser(rule([7], ['ops']), 7, [])).toBe(true)
    expect(admitsUser(rule([7], []), 8, ['ops'])).toBe(false)
  })

  it('one group in common is enough; names match exactly (case and all)', () => {
    expect(admitsUser(rule([], ['ops', 'sre']), 8, ['dev', 'sre'])).toBe(true)
    expect(admitsUser(rule([], ['ops']), 8, ['Ops'])).toBe(false)
    expect(admitsUser(rule([], ['ops']), 8, ['dev'])).toBe(false)
    expect(admitsUser(rule([], ['ops']), 8, undefined)).toBe(false)
  })
})

describe('groupsOfUser', () => {
  it('the panel-local groups, then the OIDC ones not already there', () => {
    expect(groupsOfUser({ groups: ['ops', 'dev'], oidcGroups: ['dev', 'staff'] })).toEqual(['ops', 'dev', 'staff'])
    expect(groupsOfUser({ groups: [], oidcGroups: [] })).toEqual([])
  })
})

describe('hostEntryRuleFor: the host by X-Forwarded-Host', () => {
  const team = rule([], ['ops'])
  const wild = rule([], ['ops'], '*.apps.example.test')
  const rules = new Map([
    ['team.example.test', team],
    ['*.apps.example.test', wild],
  ])
  it('by name, in any case, with or without a port', () => {
    expect(hostEntryRuleFor(rules, 'team.example.test')).toBe(team)
    expect(hostEntryRuleFor(rules, 'TEAM.example.test:8443')).toBe(team)
    expect(hostEntryRuleFor(rules, 'team.example.test.')).toBe(team)
  })
  it('a wildcard name covers one label', () => {
    expect(hostEntryRuleFor(rules, 'a.apps.example.test')).toBe(wild)
    expect(hostEntryRuleFor(rules, 'a.b.apps.example.test')).toBeNull()
  })
  it('another host, or none: no rule', () => {
    expect(hostEntryRuleFor(rules, 'other.example.test')).toBeNull()
    expect(hostEntryRuleFor(rules, undefined)).toBeNull()
  })
})

describe('the user on the access row', () => {
  it("Caddy's user_id becomes logs.actor, the X-Auth-User encoding undone", () => {
    expect(actorOfUserId('alice@example.test')).toBe('alice@example.test')
    expect(actorOfUserId(forwardAuthHeaderValue('łukasz@example.test'))).toBe('łukasz@example.test')
    expect(actorOfUserId('')).toBeNull()
    expect(actorOfUserId(undefined)).toBeNull()
    // A broken encoding is kept as it came, never dropped.
    expect(actorOfUserId("UTF-8''%E0%A4%A")).toBe("UTF-8''%E0%A4%A")
  })
})

describe('client-sent X-Auth-* headers on a host without ForwardAuth', () => {
  it('every spelling of every identity header is deleted, in the chain of every host without ForwardAuth', () => {
    const strip = buildForwardAuthHeaderStripHandler() as any
    for (const name of FORWARD_AUTH_HEADERS) expect(strip.request.delete).toContain(name)
    expect(strip.request.delete).toContain('X_Auth_Groups')
    const { config } = buildProxyConfig(
      buildSnapshot({
        hosts: [buildHostSnapshot({ id: 1 }), buildHostSnapshot({ id: 2, domain: 'fa.example.test', auth_required: true })],
      }),
    )
    expect(hostSubroutes(config, 'host1.example.test')[0].handle).toContainEqual(strip)
    // A ForwardAuth host deletes them in its check's 2xx routes instead (then sets the panel's).
    expect(hostSubroutes(config, 'fa.example.test')[0].handle).not.toContainEqual(strip)
  })
})
