import { z } from 'zod'
import { idParam, ok, operation, reconcileSchema, timestamp, type OperationDoc } from '../registry'

// Area: revisions of the pushed proxy configuration, diffs, revert, and the
// `?dry_run=1` flag of every mutating host, target group, rule, access-list and settings route.

const fieldChangeSchema = z.strictObject({ field: z.string(), before: z.unknown(), after: z.unknown() })
const objectChangeSchema = z.strictObject({
  part: z.string().describe('target_groups, hosts, rules, waf_exclusions, settings (access lists once they exist)'),
  key: z.string().describe('the object id, or the setting key'),
  label: z.string(),
  change: z.enum(['added', 'removed', 'changed']),
  fields: z.array(fieldChangeSchema),
})
const configChangeSchema = z.strictObject({
  path: z.string().describe('JSON path in the proxy configuration'),
  change: z.enum(['added', 'removed', 'changed']),
  before: z.unknown().optional(),
  after: z.unknown().optional(),
})
const revisionSchema = z.strictObject({
  id: z.number().int().describe('the revision number'),
  created_at: timestamp(),
  author: z.string(),
  api_token_id: z.union([z.number().int(), z.null()]).describe('the API token the author used, if any'),
  reason: z.string(),
  summary: z
    .array(
      z.strictObject({
        part: z.string(),
        key: z.string(),
        label: z.string(),
        change: z.enum(['added', 'removed', 'changed']),
        fields: z.array(z.string()),
      }),
    )
    .describe('objects changed since the previous revision'),
  config_hash: z.string().describe('SHA-256 of the pushed configuration'),
  reverted_to: z.union([z.number().int(), z.null()]).describe('set when this revision came from a revert to that revision'),
})

export const dryRunAnswerSchema = z.strictObject({
  dry_run: z.literal(true),
  would_push: z.boolean().describe('whether the proxy configuration would change'),
  changes: z.array(objectChangeSchema),
  config_diff: z.array(configChangeSchema).describe('secrets masked'),
  config_diff_truncated: z.boolean(),
  warnings: z.array(z.string()),
})

const dryRunQuery = z.strictObject({
  dry_run: z
    .enum(['0', '1', 'true', 'false'])
    .optional()
    .describe('1: answer the changes this would cause and change nothing (no write, no push)'),
})

/** The mutating routes that take `?dry_run=1` (one list, applied to their declarations in ./index.ts). */
export const DRY_RUN_OPERATIONS = [
  'post /api/hosts',
  'put /api/hosts/{id}',
  'delete /api/hosts/{id}',
  'post /api/hosts/{id}/toggle',
  'post /api/hosts/{id}/rules',
  'put /api/rules/{id}',
  'delete /api/rules/{id}',
  'post /api/target-groups',
  'put /api/target-groups/{id}',
  'delete /api/target-groups/{id}',
  'post /api/hosts/{id}/waf-exclusions',
  'post /api/logs/{id}/waf-exclusion',
  'post /api/logs/{id}/waf-unblock',
  'delete /api/waf-exclusions/{id}',
  'post /api/access-lists',
  'put /api/access-lists/{id}',
  'delete /api/access-lists/{id}',
  'put /api/hosts/{id}/access-list',
  'post /api/streams',
  'put /api/streams/{id}',
  'delete /api/streams/{id}',
  'put /api/settings',
  'post /api/revisions/{id}/revert',
  'post /api/revisions/{id}/undo',
]

/** Adds the dry_run query and its 200 answer to a declaration (beside the route's own 200, if any). */
export function withDryRun(op: OperationDoc): OperationDoc {
  if (!DRY_RUN_OPERATIONS.includes(`${op.method} ${op.path}`)) return op
  const own = op.responses[200]
  return {
    ...op,
    query: dryRunQuery,
    responses: {
      ...op.responses,
      200: own?.schema
        ? ok(`${own.description}; with dry_run=1: the changes it would cause`, z.union([own.schema, dryRunAnswerSchema]))
        : ok('with dry_run=1: the changes it would cause, nothing applied', dryRunAnswerSchema),
    },
  }
}

export const revisionsOperations = [
  operation({
    method: 'get',
    path: '/api/revisions',
    access: 'session',
    summary: 'Revisions of the pushed proxy configuration, newest first',
    description:
      'One per reconcile that changed what the proxy holds. The oldest beyond the `revisions.retention_count` setting are dropped.',
    responses: { 200: ok('revisions (without their state)', z.array(revisionSchema)) },
  }),
  operation({
    method: 'get',
    path: '/api/revisions/diff',
    access: 'session',
    summary: 'What changed from one revision to another',
    query: z.strictObject({ from: z.string().describe('revision id'), to: z.string().describe('revision id') }),
    responses: {
      200: ok(
        'per object and field, and the configuration (secrets masked)',
        z.strictObject({
          from: revisionSchema,
          to: revisionSchema,
          changes: z.array(objectChangeSchema),
          config_diff: z.array(configChangeSchema),
          config_diff_truncated: z.boolean(),
        }),
      ),
      404: ok('no such revision (or dropped by retention)'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/revisions/{id}',
    access: 'session',
    summary: 'One revision with its desired state and pushed configuration (secrets masked)',
    params: idParam('revision'),
    responses: {
      200: ok(
        'the revision',
        revisionSchema.extend({
          desired_state: z
            .record(z.string(), z.record(z.string(), z.record(z.string(), z.unknown())))
            .describe('part -> object id/key -> stored fields; never a secret'),
          config: z.unknown(),
        }),
      ),
      404: ok('no such revision'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/revisions/{id}/revert',
    access: 'admin',
    summary: "Restore a revision's desired state and reconcile (audited)",
    params: idParam('revision'),
    description:
      'Hosts, target groups, rules and proxy settings become what they were; the change becomes a new revision naming the one it reverted to. Refused (409) when a host of that state needs an uploaded certificate or DNS credentials that are gone.',
    responses: {
      200: ok(
        'reverted',
        z.strictObject({
          reverted_to: z.number().int(),
          revision: z
            .union([revisionSchema, z.null()])
            .describe('the new revision; null when the proxy already held that configuration or the push is pending'),
          reconcile: reconcileSchema,
        }),
      ),
      404: ok('no such revision'),
      409: ok('a certificate or credential that state needs is gone'),
      502: ok('the proxy rejected the configuration; nothing was changed'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/revisions/{id}/undo',
    access: 'admin',
    summary: 'Undo a revision: restore the state just before it and reconcile (audited)',
    params: idParam('revision'),
    description:
      "Restores the previous revision's desired state, as a revert to it would; the change becomes a new revision whose reason is `Undo of revision {id} ({its reason})`. Undoing an older revision also takes back the revisions after it (the dry run shows what would change). Refused (409) for the oldest revision kept, whose earlier state is not stored, and like a revert when a certificate or credential that state needs is gone.",
    responses: {
      200: ok(
        'undone',
        z.strictObject({
          undone: z.number().int().describe('the revision undone'),
          reverted_to: z.number().int().describe('the revision whose state was restored (the one before it)'),
          revision: z
            .union([revisionSchema, z.null()])
            .describe('the new revision; null when the proxy already held that configuration or the push is pending'),
          reconcile: reconcileSchema,
        }),
      ),
      404: ok('no such revision'),
      409: ok('the oldest revision kept (no earlier state), or a certificate or credential that state needs is gone'),
      502: ok('the proxy rejected the configuration; nothing was changed'),
    },
  }),
]
