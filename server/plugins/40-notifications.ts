import { defineNitroPlugin, runTask } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { onAuditRow } from '../utils/core/audit'
import { panelEventOfAudit } from '../utils/core/audit-actions'
import { logger } from '../utils/core/log'
import { declareBackgroundJob } from '../utils/core/runtime-state'
import { emitPanelEvent, onPanelEvent } from '../utils/ops/events'
import { registerSystemHealthSection } from '../utils/ops/health'
import { queueHealth, routeEvent } from '../utils/ops/notify/queue'
import { ensureVapidKeys, vapidSecrets } from '../utils/ops/notify/push'
import { channelSecrets } from '../utils/ops/notify/channels'
import { registerSecretSource } from '../utils/core/redact'
import { TASKS } from '../utils/core/job-names'

// Notifications: panel events routed to the channels (the queue's workers and
// their health section), audit rows turned into events, the web push keys, and
// the certificate expiry check (at boot, then daily from nitro.config.ts).
export default defineNitroPlugin(() => {
  registerSystemHealthSection('workers', queueHealth)
  // The channels' and web push's stored secrets: redacted wherever outside text is shown.
  registerSecretSource(channelSecrets)
  registerSecretSource(vapidSecrets)
  declareBackgroundJob(TASKS.certsCheckExpiry, 'task')
  whenBootReady().then(
    () => {
      onPanelEvent((e) => {
        routeEvent(e).catch((err) => logger.error(`notification routing: ${(err as Error).message}`))
      })
      // Audit actions that change configuration raise config_change, failed logins login_failed (core/audit-actions.ts).
      onAuditRow((row) => {
        const event = panelEventOfAudit(row.message)
        if (event === 'login_failed') emitPanelEvent('login_failed', { email: row.actor, remote_ip: row.remoteIp, reason: row.message })
        else if (event === 'config_change') emitPanelEvent('config_change', { action: row.message, actor: row.actor })
      })
      // The VAPID key pair exists from the first boot on, so browsers can subscribe at once.
      ensureVapidKeys().catch((err) => logger.error(`web push keys: ${(err as Error).message}`))
      runTask(TASKS.certsCheckExpiry, { payload: {} }).catch((err) => logger.warn(`certificate expiry check: ${(err as Error).message}`))
    },
    () => {},
  )
})
