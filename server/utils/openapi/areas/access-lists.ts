import { z } from 'zod'
import { accessListBody, hostAccessListBody } from '../../hosts/access-list-schemas'
import { idParam, noContent, nullableTimestamp, ok, operation, reconcileSchema, timestamp } from '../registry'

// Area: access lists (basic auth and IP rules shared by hosts, docs/access-lists.md).

export const accessListSchema = z.strictObject({
  id: z.number().int(),
  name: z.string(),
  realm: z.string(),
  default_action: z.enum(['allow', 'deny']),
  ip_rules: z
    .array(z.strictObject({ action: z.enum(['allow', 'deny']), source: z.string() }))
    .describe('read top to bottom; the first rule whose source matches decides'),
  users: z
    .array(z.strictObject({ username: z.string() }))
    .describe('usernames only: passwords are stored as bcrypt hashes and never returned'),
  host_ids: z.array(z.number().int()).describe('the hosts the list is attached to'),
  created_at: timestamp(),
  updated_at: nullableTimestamp(),
})
const listWithReconcile = accessListSchema.extend({ reconcile: reconcileSchema })
const rejected = ok('the proxy rejected the configuration ("proxy rejected configuration: <text>"); nothing was written')

export const accessListOperations = [
  operation({
    method: 'get',
    path: '/api/access-lists',
    access: 'session',
    summary: 'List access lists',
    responses: { 200: ok('every list', z.array(accessListSchema)) },
  }),
  operation({
    method: 'post',
    path: '/api/access-lists',
    access: 'admin',
    summary: 'Create an access list (reconciles the proxy)',
    body: accessListBody,
    description: 'Every user needs a password (8 to 72 bytes); it is stored as a bcrypt hash only.',
    responses: { 201: ok('the list and the reconcile outcome', listWithReconcile), 409: ok('the name is taken'), 502: rejected },
  }),
  operation({
    method: 'get',
    path: '/api/access-lists/{id}',
    access: 'session',
    summary: 'One access list',
    params: idParam('access list'),
    responses: { 200: ok('the list', accessListSchema), 404: ok('no such list') },
  }),
  operation({
    method: 'put',
    path: '/api/access-lists/{id}',
    access: 'admin',
    summary: 'Replace an access list (reconciles every host using it)',
    params: idParam('access list'),
    body: accessListBody,
    description: 'A user given without a password, or with `__UNCHANGED__`, keeps the stored one; a user left out is removed.',
    responses: {
      200: ok('the list and the reconcile outcome', listWithReconcile),
      404: ok('no such list'),
      409: ok('the name is taken, or the list changed meanwhile'),
      502: rejected,
    },
  }),
  operation({
    method: 'delete',
    path: '/api/access-lists/{id}',
    access: 'admin',
    summary: 'Delete an access list',
    params: idParam('access list'),
    responses: { 204: noContent(), 404: ok('no such list'), 409: ok('a host or a stream still uses it'), 502: rejected },
  }),
  operation({
    method: 'put',
    path: '/api/hosts/{id}/access-list',
    access: 'admin',
    summary: 'Attach an access list to a host, or detach it (null); reconciles',
    params: idParam('host'),
    body: hostAccessListBody,
    responses: {
      200: ok(
        'the attachment and the reconcile outcome',
        z.strictObject({ host_id: z.number().int(), access_list_id: z.union([z.number().int(), z.null()]), reconcile: reconcileSchema }),
      ),
      404: ok('no such host'),
      502: rejected,
    },
  }),
]
