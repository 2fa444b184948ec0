import { z } from 'zod'
import { channelBody } from '../../ops/notify/channels'
import { pushSubscriptionBody } from '../../ops/notify/push'
import { EVENT_NAMES, ruleBody as notificationRuleBody } from '../../ops/notify/queue'
import { idParam, noContent, nullableTimestamp, ok, operation, timestamp } from '../registry'
import { geoStatusSchema } from './countries'
import { timeseriesPointSchema } from './logs'

// Area: operations: notifications, backups, dashboards.

const nullable = <T extends z.ZodType>(t: T) => z.union([t, z.null()])

export const channelSchema = z.strictObject({
  id: z.number().int(),
  name: z.string(),
  type: z.enum(['webhook', 'email', 'chat', 'push']),
  enabled: z.boolean(),
  config: z.record(z.string(), z.unknown()).describe('secret parts show as "__SET__" or ""'),
  last_status: nullable(z.string()),
  last_error: nullable(z.string()),
  last_sent_at: nullableTimestamp(),
  created_at: timestamp(),
  updated_at: nullableTimestamp(),
})
export const notificationRuleSchema = z.strictObject({
  id: z.number().int(),
  name: z.string(),
  events: z.array(z.enum(EVENT_NAMES as [string, ...string[]])),
  channel_ids: z.array(z.number().int()),
  throttle_seconds: z.number().int(),
  enabled: z.boolean(),
  created_at: timestamp(),
  updated_at: nullableTimestamp(),
})
export const backupSchema = z.strictObject({
  id: z.number().int(),
  file_name: z.string(),
  size_bytes: z.number().int(),
  created_at: timestamp(),
  kind: z.enum(['scheduled', 'manual']),
  status: z.enum(['ok', 'failed']),
  sha256: nullable(z.string()),
  error: z.string().optional(),
})
const tokenRefSchema = z.strictObject({ id: z.number().int(), name: z.string(), user_email: z.string() })
const userRefSchema = z.strictObject({ id: z.number().int(), email: z.string() })
const lastBackupSchema = z.strictObject({ last_backup_at: nullableTimestamp(), last_backup_status: nullable(z.enum(['ok', 'failed'])) })
export const clientAddressHealthSchema = z
  .strictObject({
    trusted_proxies: z.array(z.string()).describe('PANEL_TRUSTED_PROXIES: the peers whose X-Forwarded-For the panel believes'),
    forwarded_by: nullable(z.strictObject({ peer: z.string(), last_at: timestamp() })).describe(
      'with PANEL_TRUSTED_PROXIES empty: the peer of the last request that carried X-Forwarded-For (a proxy the panel does not trust); null otherwise',
    ),
    warning: nullable(z.string()).describe('what to set when the panel sees a proxy instead of its visitors; null when nothing is wrong'),
  })
  .describe("whether the panel sees its visitors' addresses (audit rows, login throttle) or only a proxy's")

export const proxyHealthSchema = z.strictObject({
  reachable: nullable(z.boolean()),
  last_reconcile_at: nullableTimestamp(),
  last_reconcile_status: z.enum(['ok', 'pending', 'rejected', 'never']),
  last_error: nullable(z.string()),
  warnings: z.array(z.string()),
})
export const engineHealthSchema = z.strictObject({
  reachable: nullable(z.boolean()),
  checked_at: nullableTimestamp(),
  since: nullableTimestamp(),
  error: nullable(z.string()),
})

/** ops/problems.ts: the same list in /api/dashboard/health and /api/system/health. */
export const healthProblemsSchema = z
  .array(
    z.strictObject({
      kind: z.enum([
        'proxy_unreachable',
        'proxy_rejected',
        'security_engine_unreachable',
        'target_unhealthy',
        'certificate_failed',
        'certificate_expired',
        'certificate_expiring',
        'geo_database_missing',
        'geo_database_stale',
        'backup_failed',
        'dns_check_failed',
        'dns_check_pending',
        'proxy_storage_unreachable',
      ]),
      severity: z.enum(['error', 'warning']).describe('error: something does not work now; warning: it will, or works worse'),
      subject: z.string().describe('what is affected, in words'),
      text: z.string().describe('why, in words'),
      since: nullableTimestamp(),
      fix: z.strictObject({
        to: z.string().describe('the web UI path (with the section as #fragment) where it is fixed'),
        text: z.string(),
      }),
    }),
  )
  .describe('what is wrong, errors first; empty when all is well')

/** ops/suggestions.ts: what would make the proxy better; never a problem (the health stays OK). */
export const healthSuggestionsSchema = z
  .array(
    z.strictObject({
      kind: z.enum(['compression_off']).describe('compression_off: proxy.compression is off'),
      text: z.string().describe('what to do and why, in words'),
      fix: z.strictObject({
        to: z.string().describe('the web UI path (with the field as #fragment) where it is done'),
        text: z.string(),
      }),
    }),
  )
  .describe('what would make the proxy better; empty when there is nothing to suggest')

export const pushSubscriptionSchema = z.strictObject({
  id: z.number().int(),
  endpoint_origin: z.string().describe('only the origin: the full endpoint is a capability URL'),
  user_id: nullable(z.number().int()),
  user_agent: nullable(z.string()),
  last_status: nullable(z.string()),
  last_error: nullable(z.string()),
  last_sent_at: nullableTimestamp(),
  created_at: timestamp(),
  updated_at: nullableTimestamp(),
})

export const opsOperations = [
  operation({
    method: 'get',
    path: '/api/notifications/push/public-key',
    access: 'session',
    summary: 'The VAPID application server key for PushManager.subscribe',
    responses: { 200: ok('base64url of the uncompressed P-256 public key', z.strictObject({ public_key: z.string() })) },
  }),
  operation({
    method: 'get',
    path: '/api/notifications/push/subscriptions',
    access: 'session',
    summary: 'Browser push subscriptions',
    responses: { 200: ok('subscriptions', z.array(pushSubscriptionSchema)) },
  }),
  operation({
    method: 'post',
    path: '/api/notifications/push/subscriptions',
    access: 'admin',
    summary: "Store a browser's PushSubscription.toJSON()",
    body: pushSubscriptionBody,
    responses: {
      201: ok('stored', pushSubscriptionSchema),
      200: ok('that endpoint was already stored; keys refreshed', pushSubscriptionSchema),
    },
  }),
  operation({
    method: 'delete',
    path: '/api/notifications/push/subscriptions/{id}',
    access: 'admin',
    summary: 'Remove a push subscription',
    params: idParam('subscription'),
    responses: { 204: noContent(), 404: ok('no such subscription') },
  }),
  operation({
    method: 'get',
    path: '/api/notifications/channels',
    access: 'session',
    summary: 'Notification channels',
    responses: { 200: ok('channels', z.array(channelSchema)) },
  }),
  operation({
    method: 'post',
    path: '/api/notifications/channels',
    access: 'admin',
    summary: 'Create a channel',
    body: channelBody,
    responses: { 201: ok('the channel', channelSchema) },
  }),
  operation({
    method: 'put',
    path: '/api/notifications/channels/{id}',
    access: 'admin',
    summary: 'Replace a channel (`__UNCHANGED__` keeps a secret part)',
    params: idParam('channel'),
    body: channelBody,
    responses: { 200: ok('the channel', channelSchema), 404: ok('no such channel') },
  }),
  operation({
    method: 'delete',
    path: '/api/notifications/channels/{id}',
    access: 'admin',
    summary: 'Delete a channel',
    params: idParam('channel'),
    responses: { 204: noContent(), 404: ok('no such channel') },
  }),
  operation({
    method: 'post',
    path: '/api/notifications/channels/{id}/test',
    access: 'admin',
    summary: 'Send a test notification now',
    params: idParam('channel'),
    responses: {
      200: ok('delivered', z.strictObject({ status: z.literal('ok') })),
      404: ok('no such channel'),
      502: ok('the delivery failed: "test delivery failed: <reason>"'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/notifications/rules',
    access: 'session',
    summary: 'Notification rules',
    responses: { 200: ok('rules', z.array(notificationRuleSchema)) },
  }),
  operation({
    method: 'post',
    path: '/api/notifications/rules',
    access: 'admin',
    summary: 'Create a rule (unknown event names: 400)',
    body: notificationRuleBody,
    description: `Events: ${EVENT_NAMES.join(', ')}.`,
    responses: { 201: ok('the rule', notificationRuleSchema) },
  }),
  operation({
    method: 'put',
    path: '/api/notifications/rules/{id}',
    access: 'admin',
    summary: 'Replace a rule',
    params: idParam('rule'),
    body: notificationRuleBody,
    responses: { 200: ok('the rule', notificationRuleSchema), 404: ok('no such rule') },
  }),
  operation({
    method: 'delete',
    path: '/api/notifications/rules/{id}',
    access: 'admin',
    summary: 'Delete a rule',
    params: idParam('rule'),
    responses: { 204: noContent(), 404: ok('no such rule') },
  }),
  operation({
    method: 'get',
    path: '/api/backups',
    access: 'admin',
    summary: 'Backups, newest first',
    description: 'Admins only: a backup holds every password hash and sealed secret that the rest of the API hides.',
    responses: { 200: ok('backups', z.array(backupSchema)) },
  }),
  operation({
    method: 'post',
    path: '/api/backups',
    access: 'admin',
    summary: 'Take a consistent snapshot now',
    responses: {
      201: ok('the backup', backupSchema),
      500: ok('the snapshot could not be written (disk full, permissions): the message says why'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/backups/{id}/download',
    access: 'admin',
    summary: 'The snapshot file (gzip)',
    description: 'Admins only (a read-scope token gets 403); every download writes a `backup_download` audit row.',
    params: idParam('backup'),
    responses: { 200: ok('gzip of the database file', undefined, { contentType: 'application/gzip' }), 404: ok('no such backup') },
  }),
  operation({
    method: 'delete',
    path: '/api/backups/{id}',
    access: 'admin',
    summary: 'Delete a backup',
    params: idParam('backup'),
    responses: { 204: noContent(), 404: ok('no such backup') },
  }),
  operation({
    method: 'post',
    path: '/api/backups/{id}/restore',
    access: 'admin',
    summary: 'Replace the database by a snapshot (after an integrity check), then reconcile',
    description:
      'Credentials do not go back with the snapshot: tokens revoked or gone since stay revoked, users deleted or demoted since stay so, ' +
      'changed passwords and second factors are kept, and every session ends (the caller logs in again). The answer lists each.',
    params: idParam('backup'),
    responses: {
      200: ok(
        'restored',
        z.strictObject({
          restored: backupSchema,
          reconcile: z.looseObject({ status: z.string(), error: z.string().optional() }),
          kept: z
            .strictObject({
              api_tokens_revoked: z.array(tokenRefSchema).describe('revoked since the backup, or gone with their user: revoked'),
              api_tokens_narrowed: z.array(tokenRefSchema).describe('narrowed to read since the backup: read'),
              users_deleted: z.array(userRefSchema).describe('deleted since the backup: deleted again, with their tokens'),
              users_demoted: z.array(userRefSchema).describe('demoted to viewer since the backup: viewer, admin tokens narrowed'),
              credentials_changed: z.array(userRefSchema).describe('password or second factor changed since the backup: the new ones kept'),
            })
            .describe('what was done to credentials since the backup, applied to the restored database'),
          not_in_backup: z
            .strictObject({ users: z.array(userRefSchema), api_tokens: z.array(tokenRefSchema) })
            .describe('users and active tokens created after the backup: not in it, so gone'),
          sessions_ended: z.number().int().describe("sessions that were open; every session ended, the caller's too"),
        }),
      ),
      400: ok('the snapshot failed its integrity check, or a newer panel wrote it'),
      404: ok('no such backup'),
      409: ok('every admin of the snapshot has since been deleted or demoted: restoring it would leave no admin'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/backups/restore',
    access: 'admin',
    summary: 'Restore an uploaded backup file (as Download gives it), after the same checks as a restore from the list',
    description:
      'Upload the `.db.gz` file (an uncompressed database file is taken too; at most 256 MiB, 4 GiB unpacked). It is checked before anything is replaced: ' +
      "gzip intact, a sound SQLite database, the panel's schema, not written by a newer panel. Credentials are carried over as for " +
      '`POST /api/backups/{id}/restore`, every session ends, and a `backup_restore` audit row names the file.',
    multipart: z.strictObject({ backup: z.string().describe('the backup file (.db.gz)') }),
    responses: {
      200: ok(
        'restored',
        z.strictObject({
          restored: z
            .strictObject({ file_name: z.string(), size_bytes: z.number().int(), sha256: z.string() })
            .describe('the uploaded file (its name as sent, its size and SHA-256)'),
          reconcile: z.looseObject({ status: z.string(), error: z.string().optional() }),
          kept: z
            .strictObject({
              api_tokens_revoked: z.array(tokenRefSchema).describe('revoked since the backup, or gone with their user: revoked'),
              api_tokens_narrowed: z.array(tokenRefSchema).describe('narrowed to read since the backup: read'),
              users_deleted: z.array(userRefSchema).describe('deleted since the backup: deleted again, with their tokens'),
              users_demoted: z.array(userRefSchema).describe('demoted to viewer since the backup: viewer, admin tokens narrowed'),
              credentials_changed: z.array(userRefSchema).describe('password or second factor changed since the backup: the new ones kept'),
            })
            .describe('what was done to credentials since the backup, applied to the restored database'),
          not_in_backup: z
            .strictObject({ users: z.array(userRefSchema), api_tokens: z.array(tokenRefSchema) })
            .describe('users and active tokens created after the backup: not in it, so gone'),
          sessions_ended: z.number().int().describe("sessions that were open; every session ended, the caller's too"),
        }),
      ),
      400: ok(
        'not a panel backup, a damaged or cut-off gzip, a failed integrity check, or a database from a newer panel: nothing was changed',
      ),
      409: ok('every admin of the file has since been deleted or demoted: restoring it would leave no admin'),
      413: ok('the file is over 256 MiB'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/dashboard/traffic',
    access: 'session',
    summary: 'Requests of the last 24 h, hourly by status class, oldest first',
    responses: { 200: ok('24 buckets', z.array(timeseriesPointSchema)) },
  }),
  operation({
    method: 'get',
    path: '/api/dashboard/security',
    access: 'session',
    summary: 'Blocked requests of the last 24 h',
    responses: {
      200: ok(
        'counts',
        z.strictObject({
          connections_24h: z
            .strictObject({ total: z.number().int(), refused: z.number().int() })
            .describe('stream connections (log source layer4) of the last 24 h, and those refused (a ban, the LAN gate, an access list)'),
          blocked_24h: z.number().int(),
          blocked_by: z.strictObject({
            bouncer: z.number().int(),
            waf: z.number().int(),
            lan_only: z.number().int(),
            rate_limit: z.number().int(),
          }),
          attackers_by_country: z.array(z.strictObject({ country: nullable(z.string()), count: z.number().int() })),
          top_ips: z.array(
            z.strictObject({
              ip: nullable(z.string()),
              count: z.number().int(),
              country: nullable(z.string()),
              as_number: nullable(z.number().int()),
            }),
          ),
        }),
      ),
    },
  }),
  operation({
    method: 'get',
    path: '/api/dashboard/health',
    access: 'session',
    summary: 'Health of the proxy, the engine, geolocation and backups',
    responses: {
      200: ok(
        'health',
        z.strictObject({
          proxy: proxyHealthSchema,
          security_engine: engineHealthSchema,
          geoip: geoStatusSchema,
          backups: lastBackupSchema,
          client_addresses: clientAddressHealthSchema,
          problems: healthProblemsSchema,
          suggestions: healthSuggestionsSchema,
        }),
      ),
    },
  }),
  operation({
    method: 'get',
    path: '/api/streams/health',
    access: 'session',
    summary: 'Live health of each stream\'s upstreams, probed by the panel now (docs/streams.md "Health")',
    responses: {
      200: ok(
        'per stream, per target',
        z.strictObject({
          streams: z.array(
            z.strictObject({
              stream_id: z.number().int(),
              name: z.string(),
              protocol: z.enum(['tcp', 'udp']),
              state: z.enum(['healthy', 'degraded', 'unhealthy', 'unknown']).describe('degraded: some checked targets are down'),
              targets: z.array(
                z.strictObject({
                  address: z.string(),
                  state: z.enum(['healthy', 'unhealthy', 'unknown']),
                  cause: nullable(z.string()).describe('the dial or probe error, or why nothing is checked (unknown)'),
                  since: nullableTimestamp().describe('when this panel first saw the current state'),
                }),
              ),
            }),
          ),
        }),
      ),
    },
  }),
]
