import { describe, expect, it } from 'vitest'
import { decideOidcAccess, groupsOfClaims } from '../../server/utils/auth/oidc-groups'

// The groups of a claim and the decision they give (docs/access-control.md "OIDC groups to roles").

describe('groupsOfClaims', () => {
  it('reads a list or a single string; skips non-strings, blanks, repeats and control characters', () => {
    expect(groupsOfClaims({ groups: ['a', 'b', 'a', 3, null, ' ', ' c\u0007 '] }, 'groups')).toEqual(['a', 'b', 'c'])
    expect(groupsOfClaims({ groups: 'admins' }, 'groups')).toEqual(['admins'])
    expect(groupsOfClaims({ groups: { admins: true } }, 'groups')).toEqual([])
    expect(groupsOfClaims({}, 'groups')).toEqual([])
  })

  it('takes a dotted name whole first (a namespaced claim), then as a path; never reaches the prototype', () => {
    expect(groupsOfClaims({ 'https://example.test/groups': ['x'] }, 'https://example.test/groups')).toEqual(['x'])
    expect(groupsOfClaims({ realm_access: { roles: ['r1', 'r2'] } }, 'realm_access.roles')).toEqual(['r1', 'r2'])
    expect(groupsOfClaims({ realm_access: ['roles'] }, 'realm_access.roles')).toEqual([])
    expect(groupsOfClaims({}, 'constructor.name')).toEqual([])
  })

  it('cuts an endless list at 500 groups and long names at 256 characters', () => {
    expect(groupsOfClaims({ g: Array.from({ length: 900 }, (_, i) => `g${i}`) }, 'g')).toHaveLength(500)
    expect(groupsOfClaims({ g: ['x'.repeat(400)] }, 'g')[0]).toHaveLength(256)
  })
})

describe('decideOidcAccess', () => {
  const groupRoles = { admins: 'admin', staff: 'viewer', banned: 'none' } as const

  it('no mapping and no allowed list: allowed, the stored role kept', () => {
    expect(decideOidcAccess(['anything'], { groupRoles: {}, allowedGroups: [] })).toEqual({ allowed: true, role: null, matched: [] })
  })

  it('admin beats viewer; a user in no mapped group is a viewer', () => {
    expect(decideOidcAccess(['staff', 'admins'], { groupRoles, allowedGroups: [] })).toEqual({
      allowed: true,
      role: 'admin',
      matched: ['admins'],
    })
    expect(decideOidcAccess(['staff'], { groupRoles, allowedGroups: [] })).toEqual({ allowed: true, role: 'viewer', matched: ['staff'] })
    expect(decideOidcAccess(['other'], { groupRoles, allowedGroups: [] })).toEqual({ allowed: true, role: 'viewer', matched: [] })
  })

  it('none beats admin; outside the allowed list is refused; names match exactly', () => {
    expect(decideOidcAccess(['admins', 'banned'], { groupRoles, allowedGroups: [] })).toEqual({
      allowed: false,
      code: 'group_refused',
      matched: ['banned'],
    })
    expect(decideOidcAccess(['Admins'], { groupRoles, allowedGroups: ['admins'] })).toMatchObject({
      allowed: false,
      code: 'group_not_allowed',
    })
    expect(decideOidcAccess([], { groupRoles: {}, allowedGroups: ['family'] })).toMatchObject({ allowed: false, code: 'group_not_allowed' })
    expect(decideOidcAccess(['family'], { groupRoles: {}, allowedGroups: ['family'] })).toEqual({ allowed: true, role: null, matched: [] })
  })

  it('a group named like an object property is no mapping', () => {
    expect(decideOidcAccess(['constructor', 'toString'], { groupRoles, allowedGroups: [] })).toEqual({
      allowed: true,
      role: 'viewer',
      matched: [],
    })
  })
})
