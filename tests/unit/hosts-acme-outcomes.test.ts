import { describe, expect, it } from 'vitest'
import { explainAcmeFailure, isAbandonedAttempt } from '../../server/utils/hosts/acme-outcomes'

// The errors certmagic logs with "could not get certificate from issuer", copied
// from the production Caddy 2.11.9 (caddy-dns/rfc2136 v1.0.0) against BIND 9.18
// and Pebble 2.4 on this machine; the integration test produces them for real.
const ORDER = ' (order=https://127.0.0.1:24000/my-order/gaoNGISqdd9FEeAPnPV_HDkaSf0h98) (ca=https://127.0.0.1:24000/dir)'

describe('explainAcmeFailure — the cause of a failed order in words', () => {
  it.each([
    [
      'the update server refuses connections',
      `[unreach.example.test] solving challenges: presenting for challenge: adding temporary record for zone "example.test.": dial tcp 127.0.0.1:1: connect: connection refused${ORDER}`,
      'dns_server_unreachable',
      /^the DNS server 127\.0\.0\.1:1 could not be reached to add the challenge record for zone example\.test \(connection refused\)/,
    ],
    [
      'the update server does not answer',
      `[x.example.test] solving challenges: presenting for challenge: adding temporary record for zone "example.test.": dial tcp 192.0.2.53:53: i/o timeout${ORDER}`,
      'dns_server_unreachable',
      /could not be reached .* \(i\/o timeout\)/,
    ],
    [
      'a TSIG key the server does not accept',
      `[badsig.example.test] solving challenges: presenting for challenge: adding temporary record for zone "example.test.": dns: bad authentication${ORDER}`,
      'dns_update_refused',
      /^the DNS server refused the update to zone example\.test: it did not accept the TSIG signature/,
    ],
    [
      'an update the policy refuses',
      `[locked.test] solving challenges: presenting for challenge: adding temporary record for zone "locked.test.": dns response error code "REFUSED" (5)${ORDER}`,
      'dns_update_refused',
      /^the DNS server refused the update to zone locked\.test \(REFUSED\): the key is not allowed to change this name/,
    ],
    [
      'a name in no zone of the server',
      `[nozone.elsewhere.test] solving challenges: presenting for challenge: could not determine zone for domain "_acme-challenge.nozone.elsewhere.test": unexpected response code 'REFUSED' for _acme-challenge.nozone.elsewhere.test.${ORDER}`,
      'dns_zone_not_found',
      /^the zone holding _acme-challenge\.nozone\.elsewhere\.test could not be found: the DNS server asked for its SOA answered "unexpected response code 'REFUSED'/,
    ],
    [
      'the CA does not see the record',
      'HTTP 403 urn:ietf:params:acme:error:unauthorized - No TXT records found for DNS challenge',
      'dns_txt_not_visible',
      /^the CA could not see the challenge TXT record \(No TXT records found for DNS challenge\)/,
    ],
    [
      'the record never shows on the server',
      `[x.example.test] solving challenges: waiting for solver certmagic.solverWrapper to be ready: timed out waiting for record to fully propagate; verify DNS provider configuration is correct - last error: <nil>${ORDER}`,
      'dns_propagation_timeout',
      /never appeared on the DNS server/,
    ],
    [
      'the CA refuses connections',
      '[nocert.example.test] creating new order: fetching new nonce from server: performing request: Head "https://127.0.0.1:9/nonce-plz": dial tcp 127.0.0.1:9: connect: connection refused (ca=https://127.0.0.1:9/dir)',
      'ca_unreachable',
      // The Settings field by its label, as the Settings screen shows it, not its key.
      /^the ACME CA could not be reached: connection refused \(at https:\/\/127\.0\.0\.1:9\/dir\); check the ACME directory URL \(the host's own, or "Default ACME directory URL" in Settings\)/,
    ],
    [
      'the CA refuses connections, no directory named',
      '[nocert.example.test] creating new order: fetching directory: performing request: Get "https://127.0.0.1:9/dir": dial tcp 127.0.0.1:9: connect: connection refused',
      'ca_unreachable',
      /^the ACME CA could not be reached: connection refused \(at https:\/\/127\.0\.0\.1:9\/dir\); check/,
    ],
  ])('%s', (_name, error, kind, cause) => {
    const e = explainAcmeFailure(error)
    expect(e.kind).toBe(kind)
    expect(e.cause).toMatch(cause)
    expect(e.cause).not.toContain('order=')
  })

  it('the update server does not answer the zone lookup either (it is the resolver)', () => {
    const e = explainAcmeFailure(
      `[unreach.example.test] solving challenges: presenting for challenge: could not determine zone for domain "_acme-challenge.unreach.example.test": could not find the start of authority for _acme-challenge.unreach.example.test.: read udp 127.0.0.1:46522->127.0.0.1:39045: read: connection refused${ORDER}`,
    )
    expect(e).toEqual({
      kind: 'dns_server_unreachable',
      cause:
        'the DNS server 127.0.0.1:39045 could not be reached to look up the zone of _acme-challenge.unreach.example.test (connection refused): check the server address and that the proxy may reach it',
    })
  })

  it('an attempt a configuration push cancelled is not an outcome', () => {
    expect(
      isAbandonedAttempt(
        `[www.example.test] solving challenges: waiting for solver certmagic.solverWrapper to be ready: context canceled${ORDER}`,
      ),
    ).toBe(true)
    expect(
      isAbandonedAttempt(
        `[www.example.test] solving challenges: presenting for challenge: adding temporary record for zone "example.test.": dns: bad authentication${ORDER}`,
      ),
    ).toBe(false)
  })

  it('keeps an unknown error as it is, without the order and CA URLs', () => {
    expect(explainAcmeFailure(`[a.example.test] something new${ORDER}`)).toEqual({ kind: 'other', cause: 'something new' })
  })
})
