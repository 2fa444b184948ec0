import { defineNitroPlugin, runTask } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { onAuditRow } from '../utils/core/audit'
import { logger } from '../utils/core/log'
import { declareBackgroundJob } from '../utils/core/runtime-state'
import { emitPanelEvent, onPanelEvent } from '../utils/ops/events'
import { registerSystemHealthSection } from '../utils/ops/health'
import { queueHealth, routeEvent } from '../utils/ops/notify/queue'
import { ensureVapidKeys } from '../utils/ops/notify/push'

// Audit actions that change configuration raise config_change; a failed login raises login_failed.
const _CONFIG_ACTIONS = /^(host_|target_group_|rule_|settings_update|dns_provider_|manual_cert_|whitelist_|scenario_|notification_|user_|backup_restore|totp_enable$|totp_disable$)/
// A wrong TOTP code and an OIDC login refused after the provider answered are failed logins too
// (an unknown or expired state is not: it is what a stale browser tab produces).
const _FAILED_LOGIN_ACTIONS = /^(login_failed|login_totp_failed|oidc_(exchange_failed|token_invalid|email_not_allowed|email_not_verified|email_missing|account_conflict))$/

// Notifications: panel events routed to the channels (the queue's workers and
// their health section), audit rows turned into events, the web push keys, and
// the certificate expiry check (at boot, then daily from nitro.config.ts).
export default defineNitroPlugin(() => {
  registerSystemHealthSection('workers', queueHealth)
  declareBackgroundJob('certs:check-expiry', 'task')
  whenBootReady().then(() => {
    onPanelEvent((e) => { routeEvent(e).catch((err) => logger.error(`notification routing: ${(err as Error).message}`)) })
    onAuditRow((row) => {
      if (row.message && _FAILED_LOGIN_ACTIONS.test(row.message)) emitPanelEvent('login_failed', { email: row.actor, remote_ip: row.remoteIp, reason: row.message })
      else if (row.message && _CONFIG_ACTIONS.test(row.message)) emitPanelEvent('config_change', { action: row.message, actor: row.actor })
    })
    // The VAPID key pair exists from the first boot on, so browsers can subscribe at once.
    ensureVapidKeys().catch((err) => logger.error(`web push keys: ${(err as Error).message}`))
    runTask('certs:check-expiry', { payload: {} }).catch((err) => logger.warn(`certificate expiry check: ${(err as Error).message}`))
  }, () => {})
})
