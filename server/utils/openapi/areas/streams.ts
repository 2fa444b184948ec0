import { z } from 'zod'
import { streamBody, streamRecord } from '../../streams/schemas'
import { idParam, noContent, ok, operation, reconcileSchema, timestamp } from '../registry'

// Area: streams (TCP and UDP forwarding through the proxy's layer-4 app, docs/streams.md).

export const streamSchema = streamRecord.extend({
  ports_to_publish: z
    .string()
    .describe(
      'what the deployment must publish: "25565/tcp", "27000-27010/udp"; an SNI stream on the HTTPS port says it is "already published for the web hosts"',
    ),
  created_at: timestamp(),
  updated_at: timestamp(),
})
const withReconcile = streamSchema.extend({ reconcile: reconcileSchema })
const rejected = ok('the proxy rejected the configuration ("proxy rejected configuration: <text>"); nothing was written')
const conflicts =
  "a port (or a port of the range) is held by the proxy (HTTP, HTTPS without tls_sni, admin API) or by another stream of the protocol, an SNI name is a web host's or another SNI stream's on the port, or the name is taken; the message names who holds it"

export const streamsOperations = [
  operation({
    method: 'get',
    path: '/api/streams',
    access: 'session',
    summary: 'List streams',
    responses: { 200: ok('every stream, enabled or not', z.array(streamSchema)) },
  }),
  operation({
    method: 'post',
    path: '/api/streams',
    access: 'admin',
    summary: 'Create a stream (reconciles the proxy)',
    body: streamBody,
    description: 'A field left out takes its default (docs/streams.md). target_group_id and access_list_id must exist (400).',
    responses: { 201: ok('the stream and the reconcile outcome', withReconcile), 409: ok(conflicts), 502: rejected },
  }),
  operation({
    method: 'get',
    path: '/api/streams/{id}',
    access: 'session',
    summary: 'One stream',
    params: idParam('stream'),
    responses: { 200: ok('the stream', streamSchema), 404: ok('no such stream') },
  }),
  operation({
    method: 'put',
    path: '/api/streams/{id}',
    access: 'admin',
    summary: 'Change a stream (reconciles the proxy)',
    params: idParam('stream'),
    body: streamBody,
    description: 'An optional field left out keeps its stored value; null clears listen_port_end, access_list_id or udp_probe_hex.',
    responses: {
      200: ok('the stream and the reconcile outcome', withReconcile),
      404: ok('no such stream'),
      409: ok(conflicts),
      502: rejected,
    },
  }),
  operation({
    method: 'delete',
    path: '/api/streams/{id}',
    access: 'admin',
    summary: 'Delete a stream (its listener closes)',
    params: idParam('stream'),
    responses: { 204: noContent(), 404: ok('no such stream'), 502: rejected },
  }),
]
