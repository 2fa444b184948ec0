import { describe, expect, it } from 'vitest'
import { proxyHttpAddress } from '../../server/utils/proxy/forward-auth-check'

// Where the panel sends its ForwardAuth probe: the proxy's plain listener, as the panel reaches it.
describe('proxyHttpAddress — the listener the probe goes to', () => {
  it.each([
    [['127.0.0.1:8080'], 8080, 'http://127.0.0.1:2019', { host: '127.0.0.1', port: 8080 }],
    [['[::1]:8080'], 8080, 'http://127.0.0.1:2019', { host: '::1', port: 8080 }],
    // Listening on every address (the compose file's ":80"): the proxy's own host, as its admin URL names it.
    [[':80'], 80, 'http://10.213.0.2:2019', { host: '10.213.0.2', port: 80 }],
    [['0.0.0.0:80', '198.51.100.1:80'], 80, 'http://caddy:2019', { host: 'caddy', port: 80 }],
    [['[::]:80'], 80, 'http://[fd00::2]:2019', { host: 'fd00::2', port: 80 }],
  ])('%j with admin %s', (httpListen, httpPort, adminUrl, expected) => {
    expect(proxyHttpAddress({ httpListen, httpPort, adminUrl })).toEqual(expected)
  })
})
