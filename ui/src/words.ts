// Names in words for the API's enum values, shown wherever the UI lists them.

export const LB_POLICY_WORDS: Record<string, string> = {
  round_robin: 'Round robin (each target in turn)',
  least_conn: 'Fewest open connections',
  random: 'Random target',
  first: 'First available (the others are spares)',
  ip_hash: 'Same client address, same target',
  weighted_round_robin: "Weighted round robin (by each target's weight)",
}

export const EVENT_WORDS: Record<string, string> = {
  backup_failed: 'Backup failed',
  cert_renewal_failed: 'Certificate renewal failed',
  cert_expiring_soon: 'Certificate expiring soon',
  manual_cert_expiring_soon: 'Uploaded certificate expiring soon',
  security_engine_down: 'Security engine unreachable',
  target_unhealthy: 'Target unhealthy',
  health_degraded: 'Component health degraded',
  waf_attack_burst: 'Burst of WAF attacks',
  login_failed: 'Failed sign-in',
  rate_limit_triggered: 'Rate limit triggered',
  config_change: 'Configuration changed',
}

/** The words for a value, or the value itself when it is new to the UI. */
export const inWords = (table: Record<string, string>, value: string) => table[value] ?? value

/** Who made a decision (its origin), in words; the origin itself follows in brackets wherever it is shown. */
export const ORIGIN_WORDS: Record<string, string> = {
  crowdsec: "The engine's own detections",
  cscli: 'Made with cscli',
  'cscli-import': 'Imported with cscli',
  panel: 'Made in the panel',
  CAPI: 'Community blocklist',
  lists: 'Blocklist subscriptions',
  console: 'CrowdSec console',
  appsec: 'AppSec detections',
}

/** A decision's scope as the engine names it (Ip, Range...), in words. */
export const SCOPE_WORDS: Record<string, string> = {
  Ip: 'IP address',
  Range: 'Range',
  Country: 'Country',
  AS: 'AS number',
}

/** Where a log row comes from (the API's `source`). */
export const LOG_SOURCE_WORDS: Record<string, string> = {
  caddy_access: 'Access',
  caddy_error: 'Proxy error',
  audit: 'Audit',
  waf_audit: 'WAF',
  layer4: 'Stream connection',
}

/** Log levels: Caddy's own and the audit rows' (docs/logs.md "Audit levels"). */
export const LOG_LEVEL_WORDS: Record<string, string> = {
  debug: 'Debug',
  info: 'Info',
  notice: 'Notice',
  warn: 'Warning',
  error: 'Error',
}

/** Audit actions whose words are not their name with spaces. */
const _AUDIT_ACTION_WORDS: Record<string, string> = {
  login: 'Signed in',
  logout: 'Signed out',
  login_failed: 'Login failed',
  login_totp_failed: 'Login failed (wrong one-time code)',
  login_totp_pending: 'Password accepted, one-time code pending',
  proxy_reconcile: 'Proxy configuration applied',
  proxy_push_deferred: 'Proxy update postponed',
  geoip_refresh: 'Geolocation databases refreshed',
  log_ingestion_error: 'Log reading failed',
  logs_prune: 'Old log rows removed',
  logs_prune_failed: 'Removing old log rows failed',
  setup: 'Panel set up',
  waf_exclusion_create: 'WAF rule excluded',
  waf_exclusion_delete: 'WAF exclusion removed',
}

/** An audit action in words: "login_failed" -> "Login failed". */
export function auditActionWords(action: string): string {
  const own = _AUDIT_ACTION_WORDS[action]
  if (own) return own
  const text = action
    .replace(/_/g, ' ')
    .replace(/\boidc\b/g, 'OIDC')
    .replace(/\btotp\b/g, 'TOTP')
    .replace(/\bapi\b/g, 'API')
  return text.charAt(0).toUpperCase() + text.slice(1)
}
