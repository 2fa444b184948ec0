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
