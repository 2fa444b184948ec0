import { z } from 'zod'
import { UNCHANGED } from '../../core/settings'
import { safeText, urlSchema } from '../../core/validate'

// Request shapes of the proxy node registry (docs/scaling.md).

export const NODE_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/
export const NODE_LABEL = /^[a-z0-9][a-z0-9._:=-]{0,62}$/
/** A PEM block is ASCII lines (64 KiB holds a certificate with a long chain), or "__UNCHANGED__": keep the stored one. */
const _pemOrUnchanged = (what: string) =>
  safeText(65_536, { multiline: true, min: 1 }).refine(
    (v) => v === UNCHANGED || v.includes('-----BEGIN '),
    `must be a PEM ${what} (-----BEGIN ...) or "${UNCHANGED}"`,
  )

export const nodeTlsBody = z.strictObject({
  client_cert_pem: _pemOrUnchanged('certificate').describe(
    `the panel's client certificate, listed in the node's admin.remote access_control; "${UNCHANGED}" keeps the stored one`,
  ),
  client_key_pem: _pemOrUnchanged('private key').describe(
    `its private key, stored encrypted and never returned; "${UNCHANGED}" keeps the stored one`,
  ),
  server_ca_pem: _pemOrUnchanged('certificate')
    .describe(
      `the CA that signed the node's identity certificate (its Caddy's local CA root for the internal issuer); "${UNCHANGED}" keeps the stored one; left out: the system's CAs`,
    )
    .optional(),
})

/**
 * A bouncer key as `cscli bouncers add <name>` prints it (43 base64 characters) or as given with
 * `-k`: no spaces or quotes, long enough to be a secret; or "__UNCHANGED__": keep the stored one.
 */
export const BOUNCER_KEY = /^[A-Za-z0-9+/=._~-]{16,256}$/
const _BOUNCER_KEY_OR_UNCHANGED = new RegExp(`^(?:${UNCHANGED}|${BOUNCER_KEY.source.slice(1, -1)})$`)

export const nodeBouncerKey = z
  .string()
  .max(256)
  .regex(
    _BOUNCER_KEY_OR_UNCHANGED,
    `must be the key \`cscli bouncers add <name>\` printed (16 to 256 letters, digits or + / = . _ ~ -), or "${UNCHANGED}"`,
  )
  .nullable()
  .optional()
  .describe(
    `the node's own bouncer key on the security engine, write-only (stored encrypted, never returned); null: the node uses the shared LAPI_BOUNCER_KEY; left out or "${UNCHANGED}": keep what is stored`,
  )

export const nodeBody = z.strictObject({
  name: z
    .string()
    .trim()
    .toLowerCase()
    .regex(NODE_NAME, 'must be 1-63 lower-case letters, digits, dots, hyphens or underscores, starting with a letter or digit'),
  admin_url: urlSchema({ max: 300 })
    .describe("the node's admin API: http://<private address>:2019, or https://<address>:2021 for Caddy's remote admin endpoint")
    .optional(),
  labels: z
    .array(z.string().trim().toLowerCase().regex(NODE_LABEL, 'each label must be 1-63 lower-case letters, digits or . _ : = -'))
    .max(20, 'at most 20 labels')
    .default([]),
  enabled: z.boolean().default(true),
  tls: nodeTlsBody.nullable().optional().describe('required with an https admin URL (remote admin with TLS client authentication)'),
  bouncer_key: nodeBouncerKey,
})
export type NodeInput = z.infer<typeof nodeBody>
