import { describe, expect, it } from 'vitest'
import { checkVerdict, describeCheckFailure } from '../../server/utils/ops/target-health'

// The cause in words from the active health checker's lines, as the production Caddy
// (2.11) writes them (seen in tests/integration/ops.health-reality.test.ts).

const LOGGER = 'http.handlers.reverse_proxy.health_checker.active'

describe('target health from the checker lines', () => {
  it('a refused connection is the dial error without the request and dial prefixes', () => {
    expect(
      checkVerdict({
        logger: LOGGER,
        msg: 'HTTP request failed',
        host: '127.0.0.1:18089',
        error: 'Get "http://127.0.0.1:18089/health": dial tcp 127.0.0.1:18089: connect: connection refused',
      }),
    ).toEqual({ target: '127.0.0.1:18089', failed: true, cause: 'connect: connection refused' })
  })

  it('a wrong status names the status', () => {
    expect(checkVerdict({ logger: LOGGER, msg: 'unexpected status code', host: 'a:1', status_code: 500 })).toEqual({
      target: 'a:1',
      failed: true,
      cause: 'unexpected status code 500',
    })
    expect(describeCheckFailure('status code out of tolerances', undefined, 503)).toBe('status code out of tolerances: 503')
  })

  it('"host is up" is the recovery; other lines and loggers are not verdicts', () => {
    expect(checkVerdict({ logger: LOGGER, msg: 'host is up', host: 'a:1' })).toEqual({ target: 'a:1', failed: false, cause: null })
    expect(checkVerdict({ logger: 'http.log.error.host_1', msg: 'HTTP request failed', host: 'a:1' })).toBeNull()
    expect(checkVerdict({ logger: LOGGER, msg: 'could not count active health pass', host: 'a:1' })).toBeNull()
  })
})
