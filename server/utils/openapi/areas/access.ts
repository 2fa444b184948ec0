import { z } from 'zod'
import { previewBody, previewQuery } from '../../access/replay'
import { ok, operation, timestamp } from '../registry'

// Area: access control (docs/access-control.md): trying a geo and network policy against past traffic.

export const previewAnswerSchema = z.strictObject({
  days: z.number().int(),
  since: timestamp().describe('start of the window'),
  requests: z.number().int().describe('access rows in the window (of the host and path rule asked for)'),
  refused_requests: z.number().int().describe('of them, the ones the policy would have refused'),
  refused_addresses: z.number().int().describe('distinct client addresses with a refused request'),
  unknown_requests: z.number().int().describe('requests from addresses the country database did not place (LAN included)'),
  top_countries: z
    .array(z.strictObject({ country: z.string(), name: z.string(), requests: z.number().int() }))
    .describe('the 10 largest among refused requests'),
  top_networks: z
    .array(
      z.strictObject({
        asn: z.number().int(),
        name: z.union([z.string(), z.null()]).describe('from asn.mmdb; null when unknown'),
        requests: z.number().int(),
      }),
    )
    .describe('the 10 largest among refused requests'),
  top_paths: z.array(z.strictObject({ path: z.string(), requests: z.number().int() })).describe('the 10 largest among refused requests'),
  lockout: z.strictObject({
    would_lock_you_out: z.boolean().describe('the policy refuses one of your addresses'),
    your_addresses: z
      .array(z.strictObject({ ip: z.string(), refused: z.boolean() }))
      .describe("this request's address, then your sessions' addresses seen in the window"),
  }),
})

const _replayDescription =
  'Nothing changes (no audit row). Counts the access rows of the window by the country and AS number stored at ingestion; ' +
  'continents from the country (docs/access-control.md, "Try before it applies").'

export const accessOperations = [
  operation({
    method: 'post',
    path: '/api/access/preview',
    access: 'admin',
    summary: 'What a geo and network policy would have refused in the last days',
    description: _replayDescription,
    body: previewBody,
    responses: {
      200: ok('the replay', previewAnswerSchema),
      400: ok('a bad policy, or a host, path rule or access list that does not exist (the field is named)'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/security/countries/{cc}/preview',
    access: 'admin',
    summary: 'What banning a country would have refused in the last days (every host)',
    description: _replayDescription,
    params: {
      cc: {
        schema: z.string().regex(/^[A-Za-z]{2}$/, 'must be an ISO 3166-1 alpha-2 code such as FR'),
        description: 'ISO 3166-1 alpha-2 country code',
      },
    },
    query: previewQuery,
    responses: { 200: ok('the replay', previewAnswerSchema), 404: ok('two letters that name no country') },
  }),
]
