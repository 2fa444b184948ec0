import { describe, expect, it } from 'vitest'
import { checkResponseAgainstDocument } from '../support/openapi-contract'
import { HOST_KIND_DEFAULTS } from '../../server/utils/hosts/kind-schemas'

// The contract check itself: it must refuse what the document does not allow.

const json = (method: string, path: string, status: number, body: unknown) => ({
  method,
  path,
  status,
  headers: new Headers({ 'content-type': 'application/json' }),
  text: JSON.stringify(body),
  json: body,
})

const host = {
  id: 1,
  domain: 'a.example.test',
  aliases: [],
  target_group_id: 1,
  enabled: true,
  tls_mode: 'none',
  tls_challenge: 'http',
  tls_email: null,
  tls_dns_provider: null,
  tls_acme_ca_url: null,
  lan_only: false,
  true_detect_mode: false,
  engine_down_refuse: false,
  auth_required: false,
  waf_enabled: false,
  waf_mode: 'detection',
  rate_limit_enabled: false,
  rate_limit_rps: 50,
  rate_limit_burst: 100,
  bouncer_enabled: true,
  waf_profile: 'full',
  waf_families: ['sqli', 'xss'],
  waf_body_limit_kb: null,
  waf_body_max_args: null,
  waf_json_max_depth: null,
  waf_body_limit_action: null,
  waf_allowed_content_types: null,
  custom_handlers: [],
  custom_handlers_at: 'before_proxy',
  compression: 'inherit',
  header_rules: [],
  upstream_host: null,
  hsts: null,
  security_headers: false,
  csp: null,
  ...HOST_KIND_DEFAULTS,
  error_pages: 'inherit',
  error_page_message: null,
  geo_policy: null,
  auth_allowed_users: [],
  auth_allowed_groups: [],
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: null,
  certificate: null,
  custom_handler_count: 0,
}

describe('OpenAPI contract check', () => {
  it('accepts a body that matches, with a query string and a path parameter', () => {
    expect(checkResponseAgainstDocument(json('GET', '/api/hosts/1?x=1', 200, host))).toEqual({ template: '/api/hosts/{id}' })
    expect(checkResponseAgainstDocument(json('GET', '/api/hosts', 200, [host])).template).toBe('/api/hosts')
  })

  it('refuses a missing field, an extra field and a wrong type', () => {
    const { certificate: _, ...missing } = host
    expect(() => checkResponseAgainstDocument(json('GET', '/api/hosts/1', 200, missing))).toThrow(
      /does not match the documented schema[\s\S]*certificate/,
    )
    expect(() => checkResponseAgainstDocument(json('GET', '/api/hosts/1', 200, { ...host, secret: 'x' }))).toThrow(/additional/)
    expect(() => checkResponseAgainstDocument(json('GET', '/api/hosts/1', 200, { ...host, enabled: 'yes' }))).toThrow(/boolean/)
  })

  it('refuses an undocumented success status and a route the document lacks', () => {
    // POST /api/hosts documents 200 for its dry run (?dry_run=1); POST /api/users has no 200.
    expect(() => checkResponseAgainstDocument(json('POST', '/api/users', 200, host))).toThrow(/lists only/)
    expect(() => checkResponseAgainstDocument(json('GET', '/api/not-documented', 200, {}))).toThrow(/no GET operation/)
  })

  it('lets an error status through only when its operation lists it, with the {error} shape', () => {
    expect(checkResponseAgainstDocument(json('PUT', '/api/hosts/1', 404, { error: 'no such host' })).template).toBe('/api/hosts/{id}')
    // Listed on every operation by the document builder: the validation layer, the header limit, the token throttle.
    expect(checkResponseAgainstDocument(json('GET', '/api/users', 400, { error: 'query: unknown parameter' })).template).toBe('/api/users')
    expect(checkResponseAgainstDocument(json('GET', '/healthz', 431, { error: 'over 16 KiB' })).template).toBe('/healthz')
    expect(checkResponseAgainstDocument(json('GET', '/api/hosts', 429, { error: 'too many' })).template).toBe('/api/hosts')
    expect(() => checkResponseAgainstDocument(json('PUT', '/api/hosts/1', 418, { error: 'no' }))).toThrow(/lists only .*list this status/)
    expect(() => checkResponseAgainstDocument(json('GET', '/api/hosts', 502, { error: 'no' }))).toThrow(/lists only/)
    expect(checkResponseAgainstDocument(json('GET', '/api/nowhere', 401, { error: 'authentication required' })).template).toBeNull()
    expect(() => checkResponseAgainstDocument(json('PUT', '/api/hosts/1', 400, { message: 'no' }))).toThrow(/does not match/)
  })

  it('picks a static path over a parameter (/api/logs/stats is not /api/logs/{id})', () => {
    const stats = {
      total: 0,
      by_status_class: {},
      by_source: {},
      avg_duration_ms: null,
      p95_duration_ms: null,
      top_hosts: [],
      top_paths: [],
    }
    expect(checkResponseAgainstDocument(json('GET', '/api/logs/stats', 200, stats)).template).toBe('/api/logs/stats')
  })

  it('checks the media type of non-JSON answers and that 204 has no body', () => {
    const text = (path: string, status: number, type: string, body: string) => ({
      method: 'GET',
      path,
      status,
      headers: new Headers({ 'content-type': type }),
      text: body,
      json: undefined,
    })
    expect(checkResponseAgainstDocument(text('/api/backups/1/download', 200, 'application/gzip', 'x')).template).toBe(
      '/api/backups/{id}/download',
    )
    expect(() => checkResponseAgainstDocument(text('/api/backups/1/download', 200, 'text/html', 'x'))).toThrow(/Content-Type/)
    expect(() => checkResponseAgainstDocument({ ...text('/api/hosts/1', 204, '', 'oops'), method: 'DELETE' })).toThrow(/says none/)
  })
})
