// Every audit action the panel writes, once. `event`: the panel event the row
// raises (routed to notification channels, server/plugins/40-notifications.ts);
// `renamesHosts`: the row may change which names the hosts answer to (the log
// ingester forgets its domain -> host cache, server/plugins/35-logs.ts).
// writeAudit takes only these names, so a new action is added here or not at all.

type _PanelEventOfAudit = 'config_change' | 'login_failed'
interface AuditActionDefinition {
  event?: _PanelEventOfAudit
  renamesHosts?: true
  /** The row's level when not `info` (docs/logs.md "Audit levels"). */
  level?: AuditLevel
}

/**
 * Audit rows' levels, in the words Caddy's own lines use: `warn` for what someone may be
 * trying (a failed login), `error` for work that failed (a backup, a download, a job),
 * `notice` for what removes something (a deletion, a revocation), `info` for the rest.
 */
export type AuditLevel = 'info' | 'notice' | 'warn' | 'error'

const _config = { event: 'config_change' } as const
const _hostNames = { event: 'config_change', renamesHosts: true } as const
// A wrong password or TOTP code, and an OIDC login refused after the provider
// answered (an unknown or expired state is not: that is what a stale browser tab produces).
const _failedLogin = { event: 'login_failed', level: 'warn' } as const
const _recordOnly = {} as const
const _failed = { level: 'error' } as const
const _warning = { level: 'warn' } as const
const _removal = { level: 'notice' } as const
const _configRemoval = { event: 'config_change', level: 'notice' } as const
const _hostNamesRemoval = { event: 'config_change', renamesHosts: true, level: 'notice' } as const

export const AUDIT_ACTIONS = {
  // hosts, target groups, path rules, WAF exclusions, certificates, DNS providers
  host_create: _hostNames,
  host_update: _hostNames,
  host_toggle: _hostNames,
  host_delete: _hostNamesRemoval,
  target_group_create: _config,
  target_group_update: _config,
  target_group_delete: _configRemoval,
  rule_create: _config,
  rule_update: _config,
  rule_delete: _configRemoval,
  access_list_create: _config,
  access_list_update: _config,
  access_list_delete: _configRemoval,
  host_access_list_set: _config,
  // streams (docs/streams.md): TCP/UDP forwarding beside the web hosts
  stream_create: _config,
  stream_update: _config,
  stream_delete: _configRemoval,
  // an import creates hosts (their names) and everything they need, in one transaction
  import_apply: _hostNames,
  waf_exclusion_create: _recordOnly,
  waf_exclusion_delete: _removal,
  manual_cert_upload: _config,
  manual_cert_delete: _configRemoval,
  dns_provider_update: _config,
  dns_provider_import: _config,
  // The credentials check (writes and removes a TXT record, changes no configuration).
  dns_provider_test: _recordOnly,
  // settings, users, notifications
  settings_update: _config,
  user_create: _config,
  user_update: _config,
  user_delete: _configRemoval,
  // API tokens (a new credential is worth telling about), revisions (a revert or an undo may change every host)
  api_token_create: _config,
  api_token_revoke: _configRemoval,
  revision_revert: _hostNames,
  revision_undo: _hostNames,
  notification_channel_create: _config,
  notification_channel_update: _config,
  notification_channel_delete: _configRemoval,
  notification_rule_create: _config,
  notification_rule_update: _config,
  notification_rule_delete: _configRemoval,
  notification_push_subscription_create: _config,
  notification_push_subscription_update: _config,
  notification_push_subscription_delete: _configRemoval,
  notification_push_subscription_expired: _config,
  // security engine
  whitelist_add: _config,
  whitelist_delete: _configRemoval,
  scenario_enable: _config,
  scenario_disable: _config,
  decision_ban: _recordOnly,
  // A ban refused by its guard rails (own address, trusted proxy, LAN, whitelist): nothing changed, but an attempt to lock oneself out is worth a row.
  decision_ban_refused: _recordOnly,
  decision_delete: _removal,
  decision_unban_ip: _removal,
  country_expand_requested: _recordOnly,
  country_expand_completed: _recordOnly,
  country_expand_failed: _failed,
  country_ban_delete: _removal,
  country_ban_active: _recordOnly,
  country_ban_drifted: _warning,
  engine_drift_repair: _recordOnly,
  security_engine_up: _recordOnly,
  security_engine_down: _failed,
  // proxy
  proxy_reconcile: _recordOnly,
  proxy_push_deferred: _recordOnly,
  // proxy nodes (docs/scaling.md): the registry, and the loop giving a node that held another configuration the current one
  proxy_node_create: _config,
  proxy_node_update: _config,
  proxy_node_delete: _configRemoval,
  proxy_node_heal: _recordOnly,
  // authentication
  setup: _recordOnly,
  login: _recordOnly,
  login_totp_pending: _recordOnly,
  logout: _recordOnly,
  // strict session mode (server/utils/auth/forward-credentials.ts): a protected host's credential issued; every session ended by a switch
  forward_auth_grant: _recordOnly,
  sessions_end_all: _removal,
  login_failed: _failedLogin,
  login_totp_failed: _failedLogin,
  totp_setup: _recordOnly,
  totp_enable: _config,
  totp_disable: _config,
  totp_recovery_codes_regenerate: _recordOnly,
  totp_enable_failed: _warning,
  totp_disable_failed: _warning,
  totp_recovery_codes_failed: _warning,
  // passkeys (server/utils/auth/passkeys.ts): a new key is a new way in, like enabling TOTP
  passkey_register: _config,
  passkey_rename: _recordOnly,
  passkey_delete: _configRemoval,
  oidc_login: _recordOnly,
  oidc_user_create: _recordOnly,
  oidc_exchange_failed: _failedLogin,
  oidc_token_invalid: _failedLogin,
  oidc_email_not_allowed: _failedLogin,
  oidc_email_not_verified: _failedLogin,
  oidc_email_missing: _failedLogin,
  oidc_account_conflict: _failedLogin,
  oidc_oidc_disabled: _recordOnly,
  oidc_provider_unreachable: _failed,
  oidc_state_not_found: _recordOnly,
  oidc_provider_error: _failed,
  oidc_invalid_request: _warning,
  oidc_internal_error: _failed,
  // OIDC groups to roles (server/utils/auth/oidc-groups.ts): a login refused by the groups, a role the mapping set, the last admin kept
  oidc_group_not_allowed: _failedLogin,
  oidc_group_refused: _failedLogin,
  oidc_role_change: _config,
  oidc_role_mapping_skipped: _warning,
  // operations
  backup_create: _recordOnly,
  backup_delete: _removal,
  // who took a copy of every credential hash and sealed secret (issue 33)
  backup_download: _recordOnly,
  backup_expire: _recordOnly,
  backup_failed: _failed,
  backup_restore: _hostNames,
  auth_sweep: _recordOnly,
  geoip_refresh: _recordOnly,
  logs_prune: _recordOnly,
  logs_prune_failed: _failed,
  database_vacuum: _recordOnly,
  log_ingestion_error: _failed,
} as const satisfies Record<string, AuditActionDefinition>

export type AuditAction = keyof typeof AUDIT_ACTIONS

function _definition(action: string): AuditActionDefinition | undefined {
  return Object.hasOwn(AUDIT_ACTIONS, action) ? AUDIT_ACTIONS[action as AuditAction] : undefined
}

/** The panel event an audit row raises, if any (rows are read back from the logs table as plain strings). */
export function panelEventOfAudit(action: string | null): _PanelEventOfAudit | null {
  return (action && _definition(action)?.event) || null
}

export function auditActionRenamesHosts(action: string | null): boolean {
  return !!action && !!_definition(action)?.renamesHosts
}

/**
 * An audit row's level: the action's own, else `error` when the details say the work failed
 * (a geolocation refresh with status `failed`), else `info`.
 */
export function auditLevelOf(action: string, details: Record<string, unknown> = {}): AuditLevel {
  const own = _definition(action)?.level
  if (own) return own
  if (details.status === 'failed' || (details.error !== undefined && details.error !== null && details.error !== '')) return 'error'
  return 'info'
}
