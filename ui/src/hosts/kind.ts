// The host's kind in the form (docs/hosts.md, "Host kinds"): what answers at the end
// of its chain. The form keeps every kind's fields, so switching back and forth loses
// nothing; the body sends them all (the API keeps those the kind does not use).

export type HostKind = 'proxy' | 'redirect' | 'static' | 'maintenance'

export const KIND_WORDS: Record<HostKind, string> = {
  proxy: 'Proxy to upstream servers',
  redirect: 'Redirect',
  static: 'Fixed page',
  maintenance: 'Maintenance page',
}

/** Short words for the hosts list. */
export function kindSummary(h: any): string {
  switch (h.kind as HostKind | undefined) {
    case 'redirect':
      return `Redirect (${h.redirect_status}) to ${h.redirect_to}`
    case 'static':
      return `Fixed page (${h.static_status})`
    case 'maintenance':
      return 'Maintenance page (503)'
    default:
      return 'Proxy'
  }
}

export interface KindForm {
  kind: HostKind
  redirect_to: string
  redirect_status: number
  redirect_keep_path: boolean
  static_status: number
  static_content_type: string
  static_body: string
  maintenance_retry_after: number
  maintenance_content_type: string
  maintenance_body: string
  maintenance_bypass: string
}

export function emptyKindForm(): KindForm {
  return {
    kind: 'proxy',
    redirect_to: '',
    redirect_status: 302,
    redirect_keep_path: true,
    static_status: 200,
    static_content_type: 'text/plain; charset=utf-8',
    static_body: '',
    maintenance_retry_after: 300,
    maintenance_content_type: 'text/plain; charset=utf-8',
    maintenance_body: 'This site is down for maintenance. Please try again later.',
    maintenance_bypass: '',
  }
}

export function kindFormOf(h: any): KindForm {
  return {
    ...emptyKindForm(),
    kind: h.kind ?? 'proxy',
    redirect_to: h.redirect_to ?? '',
    redirect_status: h.redirect_status ?? 302,
    redirect_keep_path: h.redirect_keep_path ?? true,
    static_status: h.static_status ?? 200,
    static_content_type: h.static_content_type ?? 'text/plain; charset=utf-8',
    static_body: h.static_body ?? '',
    maintenance_retry_after: h.maintenance_retry_after ?? 300,
    maintenance_content_type: h.maintenance_content_type ?? 'text/plain; charset=utf-8',
    maintenance_body: h.maintenance_body ?? '',
    maintenance_bypass: (h.maintenance_bypass ?? []).join(', '),
  }
}

/** Whether the kind uses a target group: a proxy host always, a maintenance host for its bypass. */
export function kindUsesGroup(kind: HostKind): boolean {
  return kind === 'proxy' || kind === 'maintenance'
}

export function kindBody(f: KindForm) {
  return {
    kind: f.kind,
    redirect_to: f.redirect_to.trim() || null,
    redirect_status: Number(f.redirect_status),
    redirect_keep_path: f.redirect_keep_path,
    static_status: Number(f.static_status),
    static_content_type: f.static_content_type.trim(),
    static_body: f.static_body,
    maintenance_retry_after: Number(f.maintenance_retry_after),
    maintenance_content_type: f.maintenance_content_type.trim(),
    maintenance_body: f.maintenance_body,
    maintenance_bypass: f.maintenance_bypass.split(/[\s,]+/).filter(Boolean),
  }
}
