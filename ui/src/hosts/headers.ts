// The host form's header fields (docs/hosts.md, "Header rules"): their empty values
// and the request body they make. Kept beside HeaderFields.vue so the host form
// adds them with one line each.

export interface HeaderRuleRow {
  direction: 'request' | 'response'
  action: 'set' | 'add' | 'remove'
  name: string
  value: string
}
export interface HeaderForm {
  header_rules: HeaderRuleRow[]
  upstream_host: string
  hsts: { max_age: number; include_subdomains: boolean; preload: boolean } | null
  security_headers: boolean
  csp: { mode: 'enforce' | 'report-only'; policy: string } | null
}

export function headerDefaults(): HeaderForm {
  return { header_rules: [], upstream_host: '', hsts: null, security_headers: false, csp: null }
}

/** What the API gets: a removal has no value, an empty upstream Host is none. */
export function headerBody(form: HeaderForm) {
  return {
    header_rules: form.header_rules.map((r) => ({
      direction: r.direction,
      action: r.action,
      name: r.name.trim(),
      value: r.action === 'remove' ? null : r.value,
    })),
    upstream_host: form.upstream_host.trim() || null,
    hsts: form.hsts ? { ...form.hsts, max_age: Number(form.hsts.max_age) } : null,
    security_headers: form.security_headers,
    csp: form.csp ? { ...form.csp } : null,
  }
}

/** A stored host's header fields as the form holds them (a null value becomes an empty field). */
export function headerFormOf(h: any): HeaderForm {
  return {
    header_rules: (h.header_rules ?? []).map((r: any) => ({ ...r, value: r.value ?? '' })),
    upstream_host: h.upstream_host ?? '',
    hsts: h.hsts ? { ...h.hsts } : null,
    security_headers: !!h.security_headers,
    csp: h.csp ? { ...h.csp } : null,
  }
}
