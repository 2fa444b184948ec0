// Well-formed credentials for every catalogue provider, in the vendors' shapes
// (made up: none is a real account's). Every value that is not public holds
// "SECRET" or is registered as a secret by the tests that send it.

const pad = (prefix: string, length: number, fill = '0') => prefix + fill.repeat(length - prefix.length)
const uuid = (n: number) =>
  `${String(n).repeat(8)}-${String(n).repeat(4)}-4${String(n).repeat(3)}-a${String(n).repeat(3)}-${String(n).repeat(12)}`

const _SAMPLES: Record<string, Record<string, string>> = {
  provider_a: { api_token: pad('SECRETcf', 40, 'c') },
  provider_b: { access_key_id: 'AKIAIOSFODNN7SAMPLE1', secret_access_key: pad('SECRET/aws+', 40, 'k'), region: 'eu-west-3' },
  provider_c: {
    server: '127.0.0.1:53',
    key_name: 'acme-update',
    key_alg: 'hmac-sha256',
    key: Buffer.from(pad('SECRETtsig', 32, 't')).toString('base64'),
    zone: 'example.test',
  },
  hetzner: { auth_api_token: pad('SECRET', 32, 'h') },
  digitalocean: { auth_token: `dop_v1_${'d0'.repeat(32)}` },
  gandi: { bearer_token: pad('SECRETgandi', 40, 'g') },
  porkbun: { api_key: `pk1_${'a1'.repeat(32)}`, api_secret_key: `sk1_${pad('SECRET', 64, 'b')}` },
  powerdns: { server_url: 'https://pdns.example.test:8081', api_token: 'SECRET-pdns!key', server_id: 'localhost' },
  namecheap: { api_key: pad('SECRETnamecheap', 32, 'n'), user: 'opsuser', client_ip: '203.0.113.7' },
  azure: {
    subscription_id: uuid(1),
    resource_group_name: 'dns-rg',
    tenant_id: uuid(2),
    client_id: uuid(3),
    client_secret: pad('SECRET~azure.secret_', 40, 'z'),
  },
  googleclouddns: { gcp_project: 'panel-test-123', gcp_application_default: '/etc/caddy/gcp-dns.json' },
  linode: { api_token: pad('SECRETlinode', 64, 'l') },
  netcup: { customer_number: '123456', api_key: pad('SECRETnetcupKey', 30, 'k'), api_password: pad('SECRETnetcupPass', 30, 'p') },
  ionos: { auth_api_token: `${'f'.repeat(32)}.${pad('SECRETionos_', 86, 'i')}` },
  bunny: { access_key: pad('SECRET-bunny-', 72, 'b') },
  alidns: { access_key_id: pad('LTAI', 24, 'A'), access_key_secret: pad('SECRETali', 30, 'a'), region_id: 'cn-hangzhou' },
  duckdns: { api_token: uuid(6), override_domain: 'panel-test.duckdns.org' },
  godaddy: { api_token: `${pad('gdKEY', 30, 'k')}:${pad('SECRETgd', 22, 's')}` },
  acmedns: { server_url: 'https://auth.example.test', username: uuid(4), password: pad('SECRETacmedns_-', 40, 'p'), subdomain: uuid(5) },
  cloudns: { auth_id: '1234', sub_auth_id: '5678', auth_password: 'SECRET-cloudns!pw' },
  loopia: { username: 'panel-test@loopiaapi', password: 'SECRET-loopia#pw', customer: 'C12345' },
  huaweicloud: { access_key_id: pad('HWAKSECRET', 20, 'Q'), secret_access_key: pad('SECREThuawei', 40, 'k'), region_id: 'ap-southeast-1' },
  luadns: { email: 'ops@example.test', api_key: pad('SECRETlua', 32, 'f') },
}

/** The propagation settings every provider takes (a loopback port where nothing answers: no test traffic leaves the machine). */
export const PROPAGATION_SAMPLE = { propagation_timeout: '90', propagation_resolvers: '127.0.0.1:5399' }

/** Every provider but acme-dns also takes a delegation zone (provider_c's inside its own zone); every one the propagation settings. */
export const DNS_SAMPLES: Record<string, Record<string, string>> = Object.fromEntries(
  Object.entries(_SAMPLES).map(([name, sample]) => [
    name,
    name === 'acmedns'
      ? { ...sample, ...PROPAGATION_SAMPLE }
      : { ...sample, challenge_delegation: name === 'provider_c' ? 'acme.example.test' : 'acme.example.net', ...PROPAGATION_SAMPLE },
  ]),
)

/**
 * Malformed forms of a well-formed value, refused by every field's format: a
 * quote (pasted with its JSON around it) and a Caddy placeholder (which the
 * module would expand from the proxy's environment).
 */
export function malformedForms(value: string): Array<[string, string]> {
  return [
    ['with a quote before it', `"${value}`],
    ['with a {placeholder} after it', `${value}{env.HOME}`],
  ]
}
