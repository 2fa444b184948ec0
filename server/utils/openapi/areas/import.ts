import { z } from 'zod'
import { caddyfileImportBody } from '../../import/schemas'
import { ok, operation, reconcileSchema } from '../registry'

// Area: importing from a Caddyfile and from nginx-proxy-manager (docs/import.md).

const noteSchema = z.strictObject({
  kind: z.string(),
  name: z.string(),
  source: z.string().describe('where it came from: "Caddyfile line 12", "proxy_host 3"'),
  why: z.string(),
})
export const importReportSchema = z.strictObject({
  applied: z.boolean().describe('false: a dry run, nothing was written'),
  items: z.array(
    z.strictObject({
      kind: z.enum(['target_group', 'access_list', 'host', 'rule', 'certificate', 'stream']),
      name: z.string(),
      source: z.string(),
      outcome: z
        .enum(['create', 'exists'])
        .describe('create: created (or would be, in a dry run); exists: the name exists already and is left as it is'),
      tls: z
        .strictObject({
          mode: z.enum(['auto', 'manual', 'none']),
          text: z.string().describe('in words: "Automatic (ACME), HTTP-01 challenge, from acme-v02.api.letsencrypt.org"'),
          warning: z.string().nullable().describe('set when importing starts a certificate order at a public CA at once'),
        })
        .optional()
        .describe('hosts to be created: the TLS each gets'),
      id: z.number().int().optional().describe('an applied import: the id of the host or stream created'),
    }),
  ),
  imperfect: z.array(noteSchema).describe('imported, but not exactly as the source had it, and why'),
  not_importable: z.array(noteSchema).describe('left out, and why'),
  reconcile: reconcileSchema.optional().describe('present when the import created something'),
})

export const importOperations = [
  operation({
    method: 'post',
    path: '/api/import/caddyfile',
    access: 'admin',
    summary: 'Import a Caddyfile: dry run, or apply in one transaction and one reconcile',
    body: caddyfileImportBody,
    description:
      'The real `caddy adapt` (PANEL_CADDY_BIN) turns the file into JSON; sites become hosts, target groups, rules and access lists. Whatever would make caddy read a file of the panel machine is refused before it runs (`import` of anything but a snippet defined above, `{$VAR}`, `{env.*}`, `{file.*}`, snippet arguments, `trusted_*_file`); snippets are fine.',
    responses: {
      200: ok('what is (or would be) created, what exists already, what maps imperfectly and what cannot be imported', importReportSchema),
      400: ok(
        "the Caddyfile would read a file (the line and what to change), or does not adapt (its line and a generic cause, never caddy's text)",
      ),
      502: ok('the proxy rejected the configuration; nothing was written'),
      503: ok('the caddy binary is missing or did not answer'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/import/npm',
    access: 'admin',
    summary: 'Import an nginx-proxy-manager database: dry run, or apply in one transaction and one reconcile',
    description:
      "Upload its `data/database.sqlite` (at most 64 MiB). Proxy hosts (with custom locations), redirection hosts, 404 hosts, access lists (users and clients) and certificates (Let's Encrypt and custom) are read; streams are listed as not importable.",
    multipart: z.strictObject({
      database: z.string().describe("nginx-proxy-manager's SQLite database file"),
      apply: z.enum(['true', 'false']).optional().describe('"true" imports; anything else is a dry run (default)'),
    }),
    responses: {
      200: ok('what is (or would be) created, what exists already, what maps imperfectly and what cannot be imported', importReportSchema),
      400: ok(
        'the file is not an nginx-proxy-manager database: not SQLite, a table missing, a view, a trigger, a table or a generated column it does not have, or a table over its row cap',
      ),
      413: ok('the file is over 64 MiB'),
      502: ok('the proxy rejected the configuration; nothing was written'),
    },
  }),
]
