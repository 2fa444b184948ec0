import { describe, expect, it } from 'vitest'
import { AUDIT_ACTIONS, auditActionRenamesHosts, panelEventOfAudit } from '../../server/utils/core/audit-actions'

describe('the audit action catalogue', () => {
  it('configuration changes raise config_change; read-only and engine bookkeeping rows raise nothing', () => {
    for (const a of [
      'host_update',
      'rule_delete',
      'settings_update',
      'dns_provider_import',
      'notification_push_subscription_expired',
      'backup_restore',
      'totp_enable',
      'totp_disable',
    ])
      expect([a, panelEventOfAudit(a)]).toEqual([a, 'config_change'])
    for (const a of [
      'totp_enable_failed',
      'waf_exclusion_create',
      'decision_ban',
      'country_ban_drifted',
      'login',
      'logs_prune',
      'proxy_reconcile',
    ])
      expect([a, panelEventOfAudit(a)]).toEqual([a, null])
  })

  it('failed logins raise login_failed, an expired OIDC state (a stale tab) does not', () => {
    for (const a of ['login_failed', 'login_totp_failed', 'oidc_exchange_failed', 'oidc_email_not_allowed', 'oidc_account_conflict'])
      expect([a, panelEventOfAudit(a)]).toEqual([a, 'login_failed'])
    expect(panelEventOfAudit('oidc_state_not_found')).toBeNull()
  })

  it('unknown text, an inherited property name and null raise nothing', () => {
    expect(panelEventOfAudit('host_create_and_more')).toBeNull()
    expect(panelEventOfAudit('constructor')).toBeNull()
    expect(panelEventOfAudit('toString')).toBeNull()
    expect(panelEventOfAudit(null)).toBeNull()
  })

  it('only host changes, restores, imports, reverts and undos make the ingester forget host names', () => {
    const renaming = Object.keys(AUDIT_ACTIONS).filter(auditActionRenamesHosts).sort()
    expect(renaming).toEqual([
      'backup_restore',
      'host_create',
      'host_delete',
      'host_toggle',
      'host_update',
      'import_apply',
      'revision_revert',
      'revision_undo',
    ])
  })
})
