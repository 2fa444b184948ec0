import { z } from 'zod'
import { expandBody, jobsQuery } from '../../security/countries'
import { geoLookupQuery } from '../../geo/readers'
import { asnSearchQuery, asnSearchResult } from '../../geo/asn-names'
import { idParam, nullableTimestamp, ok, operation, timestamp } from '../registry'

// Area: country bans (expansion into Range decisions), their jobs, geolocation.

const ccParam = {
  cc: {
    schema: z.string().regex(/^[A-Za-z]{2}$/, 'must be an ISO 3166-1 alpha-2 code such as FR'),
    description: 'ISO 3166-1 alpha-2 country code',
  },
}

export const jobSchema = z.strictObject({
  id: z.number().int(),
  country_code: z.string(),
  state: z.enum(['pending', 'running', 'completed', 'failed']),
  chunks_total: z.number().int(),
  chunks_done: z.number().int(),
  chunks_failed: z.number().int(),
  cidr_committed: z.number().int(),
  requested_count: z.number().int(),
  duration: z.string(),
  reason: z.string(),
  error_message: z.string(),
  created_at: timestamp(),
  started_at: nullableTimestamp(),
  completed_at: nullableTimestamp(),
  created_by: z.string(),
})

export const countryBanSchema = z.strictObject({
  country_code: z.string(),
  cidrs: z.array(z.string()),
  cidr_count: z.number().int(),
  mmdb_version: z.string(),
  state: z.enum(['active', 'drifted']),
  duration: z.string(),
  created_at: timestamp(),
  updated_at: nullableTimestamp(),
  checked_at: nullableTimestamp(),
})

const geoFile = z.strictObject({
  loaded: z.boolean(),
  version: z.union([z.string(), z.null()]),
  build_epoch: z.union([z.number().int(), z.null()]),
  size_bytes: z.union([z.number().int(), z.null()]),
})
export const geoStatusSchema = z.strictObject({
  country: geoFile,
  asn: geoFile,
  last_refresh_at: nullableTimestamp(),
  last_refresh_status: z.string().describe('never, ok, partial or failed'),
  last_refresh_errors: z.record(z.string(), z.string()),
})

export const countriesOperations = [
  operation({
    method: 'post',
    path: '/api/security/countries/{cc}/expand',
    access: 'admin',
    summary: 'Ban a country: starts an expansion job',
    params: ccParam,
    body: expandBody,
    description: 'Poll GET /api/security/jobs/{id} every second until `completed` or `failed`.',
    responses: {
      202: ok('the job, pending', jobSchema),
      404: ok('two letters that name no country'),
      503: ok('the country database is not loaded'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/security/countries',
    access: 'session',
    summary: 'Country ban records',
    responses: { 200: ok('records', z.array(countryBanSchema)) },
  }),
  operation({
    method: 'delete',
    path: '/api/security/countries/{cc}',
    access: 'admin',
    summary: "Revoke a country ban (one local-API call for the country's origin)",
    params: ccParam,
    responses: {
      200: ok('what was removed', z.strictObject({ country_code: z.string(), removed_decision_count: z.number().int() })),
      404: ok('no ban for that country, or two letters that name no country'),
      503: ok('the local API is unreachable'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/security/jobs',
    access: 'session',
    summary: 'Recent expansion jobs, newest first',
    query: jobsQuery,
    responses: { 200: ok('jobs', z.array(jobSchema)) },
  }),
  operation({
    method: 'get',
    path: '/api/security/jobs/{id}',
    access: 'session',
    summary: 'One expansion job',
    params: idParam('job'),
    responses: { 200: ok('the job', jobSchema), 404: ok('no such job') },
  }),
  operation({
    method: 'get',
    path: '/api/geoip/lookup',
    access: 'session',
    summary: 'Country and ASN of an address (LAN addresses: country LAN, ASN 0)',
    query: geoLookupQuery,
    responses: {
      200: ok(
        'the annotation',
        z.strictObject({
          ip: z.string(),
          country: z.union([z.string(), z.null()]),
          as_number: z.union([z.number().int(), z.null()]),
          as_organization: z.union([z.string(), z.null()]),
        }),
      ),
    },
  }),
  operation({
    method: 'get',
    path: '/api/geoip/asns',
    access: 'session',
    summary: 'Networks of the AS number database by name or number, or the names of given AS numbers',
    description:
      'With `q`: the networks whose number is `q` (first), whose name starts with it, then whose name contains it, at most `limit`. ' +
      'With `asn`: every number given, with its name or null. Without the AS database: no networks and a `note` saying so.',
    query: asnSearchQuery,
    responses: { 200: ok('the networks', asnSearchResult), 400: ok('neither q nor asn, or a bad value: "<field>: <what to fix>"') },
  }),
  operation({
    method: 'get',
    path: '/api/geoip/status',
    access: 'session',
    summary: 'Geolocation databases',
    responses: { 200: ok('status', geoStatusSchema) },
  }),
  operation({
    method: 'post',
    path: '/api/geoip/refresh',
    access: 'admin',
    summary: 'Download both geolocation databases now',
    responses: {
      200: ok('status after the refresh', geoStatusSchema),
      502: ok('a download failed: "geolocation refresh failed: <file>: <reason>"; the files already loaded stay'),
    },
  }),
]
