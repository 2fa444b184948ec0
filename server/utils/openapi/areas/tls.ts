import { z } from 'zod'
import { dnsProviderBody } from '../../hosts/dns-providers'
import { manualCertDeleteQuery } from '../../hosts/manual-certs'
import { dnsProviderNameParam, dnsProviderNameSchema } from '../../hosts/schemas'
import { dnsCheckBody, dnsCheckSchema } from '../../proxy/dns-check'
import { idText, noContent, ok, operation, reconcileSchema, timestamp } from '../registry'

// Area: DNS-01 provider catalogue and credentials, manual certificates.

export const dnsProviderSchema = z.strictObject({
  name: dnsProviderNameSchema,
  display_name: z.string(),
  enabled: z.boolean(),
  configured: z.boolean().describe('credentials are stored'),
  fields: z.array(
    z.strictObject({
      key: z.string(),
      label: z.string(),
      required: z.boolean(),
      placeholder: z.string().optional(),
      secret: z.boolean().optional(),
      options: z.array(z.string()).optional().describe('the only values the field takes'),
    }),
  ),
  proxy_module: z.string(),
  docs_url: z.string(),
  challenge_delegation: z
    .string()
    .nullable()
    .describe('the stored delegation zone (not a secret; null: none, or acmedns); the form shows it so a save keeps it'),
  propagation_timeout: z
    .number()
    .int()
    .nullable()
    .describe("seconds the proxy waits for the challenge record at the DNS servers before asking the CA (null: Caddy's 120)"),
  propagation_resolvers: z
    .string()
    .nullable()
    .describe(
      "host:port servers, comma-separated, the record is looked for at (null: the zone's authoritative servers, RFC 2136: its server)",
    ),
})

export const manualCertSchema = z.strictObject({
  host_id: z.number().int(),
  domain: z.string(),
  subject: z.string(),
  issuer: z.string(),
  sans: z.array(z.string()),
  not_before: timestamp(),
  not_after: timestamp(),
  fingerprint_sha256: z.string(),
  has_chain: z.boolean(),
  uploaded_at: timestamp(),
  uploaded_by: z.string(),
})

/** The GET answers add the last credentials check (null: none, or the credentials changed since). */
const dnsProviderWithCheckSchema = dnsProviderSchema.extend({ last_check: dnsCheckSchema.nullable() })

const nameParam = { name: { schema: dnsProviderNameParam, description: 'catalogue name' } }
const hostIdParam = { host_id: { schema: idText(), description: 'host id' } }
const rejected = ok('the proxy rejected the configuration; its text is in the message')

export const tlsOperations = [
  operation({
    method: 'get',
    path: '/api/dns-providers',
    access: 'session',
    summary: 'The DNS provider catalogue with stored state (never credentials)',
    responses: { 200: ok('catalogue entries', z.array(dnsProviderWithCheckSchema)) },
  }),
  operation({
    method: 'get',
    path: '/api/dns-providers/{name}',
    access: 'session',
    summary: 'One catalogue entry',
    params: nameParam,
    responses: {
      200: ok('the entry', dnsProviderWithCheckSchema),
      404: ok('no such name in the catalogue (GET /api/dns-providers lists it)'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/dns-providers/{name}/test',
    access: 'admin',
    summary: 'Check the stored credentials: write, look for and remove a TXT record in a zone',
    params: nameParam,
    description:
      "Node 1's proxy loads the provider with the stored credentials exactly as an ACME order would, writes the TXT record `_panel-check.<zone>`, waits up to 60 s until the zone's authoritative servers answer it (for RFC 2136: the update server), and removes it. Each step (`authenticate`, `write`, `visible`, `remove`) is reported in words; no credential appears in the answer or the audit row (`dns_provider_test`). The result is kept and shown as `last_check` by the GET answers until the credentials change. Works on a disabled provider, so credentials can be proved before hosts depend on them.",
    body: dnsCheckBody,
    responses: {
      200: ok('the check (ok false: a step failed, said in its detail)', dnsCheckSchema),
      400: ok("no credentials stored, or a zone that is malformed or outside the provider's zone"),
      404: ok('no such name in the catalogue (GET /api/dns-providers lists it)'),
      502: ok("node 1's proxy is unreachable or has no DNS check"),
    },
  }),
  operation({
    method: 'put',
    path: '/api/dns-providers/{name}',
    access: 'admin',
    summary: 'Enable/disable a provider and set its credentials (reconciles the proxy)',
    params: nameParam,
    description:
      'Required fields are checked against the catalogue; unknown keys are refused. `__UNCHANGED__` keeps a stored value. `{enabled: false}` alone keeps the credentials.',
    body: dnsProviderBody,
    responses: {
      200: ok('the entry and the reconcile outcome', dnsProviderSchema.extend({ reconcile: reconcileSchema })),
      404: ok('no such name in the catalogue (GET /api/dns-providers lists it)'),
      502: rejected,
    },
  }),
  operation({
    method: 'get',
    path: '/api/manual-certs',
    access: 'session',
    summary: 'Metadata of every uploaded certificate (never the key)',
    responses: { 200: ok('metadata', z.array(manualCertSchema)) },
  }),
  operation({
    method: 'get',
    path: '/api/manual-certs/{host_id}',
    access: 'session',
    summary: "A host's uploaded certificate metadata",
    params: hostIdParam,
    responses: { 200: ok('metadata', manualCertSchema), 404: ok('the host has none') },
  }),
  operation({
    method: 'post',
    path: '/api/manual-certs/{host_id}',
    access: 'admin',
    summary: 'Upload a certificate for a host (sets tls_mode=manual)',
    params: hostIdParam,
    description:
      "Refused (400) when a part is not PEM, the key does not match, the chain does not verify, the certificate expired or does not cover the host's names. 256 KiB per part.",
    multipart: z.strictObject({
      cert_pem: z.string().describe('leaf certificate PEM'),
      key_pem: z.string().describe('private key PEM (stored encrypted)'),
      chain_pem: z.string().optional().describe('intermediate certificates PEM'),
    }),
    responses: {
      201: ok('metadata and the reconcile outcome', manualCertSchema.extend({ reconcile: reconcileSchema })),
      404: ok('no such host'),
      502: rejected,
    },
  }),
  operation({
    method: 'delete',
    path: '/api/manual-certs/{host_id}',
    access: 'admin',
    summary: 'Remove the certificate and its files; revert the TLS mode',
    params: hostIdParam,
    query: manualCertDeleteQuery,
    responses: { 204: noContent(), 404: ok('the host has none') },
  }),
  operation({
    method: 'get',
    path: '/api/manual-certs/{host_id}/download',
    access: 'session',
    summary: 'The certificate and chain as PEM (never the key)',
    params: hostIdParam,
    responses: { 200: ok('PEM file', undefined, { contentType: 'application/x-pem-file' }), 404: ok('the host has none') },
  }),
]
