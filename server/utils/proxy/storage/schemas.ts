import { z } from 'zod'

// Where every proxy node keeps its certificates, ACME accounts, challenge data
// and locks (docs/scaling.md, "Certificate storage"). One choice for the whole
// fleet, as run-time settings: `proxy.storage` (this shape) and three secret
// settings beside it (`proxy.storage.redis_password`,
// `proxy.storage.sentinel_password`, `proxy.storage.encryption_key`), sealed
// with PANEL_MASTER_KEY like every other secret and never in an answer.

/** host:port of a Redis server or Sentinel; IPv6 in brackets. */
const redisAddress = z
  .string()
  .trim()
  .max(255)
  .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'must be host:port such as 10.0.0.5:6379 (IPv6 as [2001:db8::5]:6379)')
  .refine((v) => {
    const port = Number(v.slice(v.lastIndexOf(':') + 1))
    return port >= 1 && port <= 65_535
  }, 'port must be from 1 to 65535')

export const fileSystemStorageSchema = z.strictObject({ module: z.literal('file_system') })

export const redisStorageSchema = z
  .strictObject({
    module: z.literal('redis'),
    /** single: one server; sentinel: the Sentinels' addresses; cluster: some of the cluster's nodes. */
    mode: z.enum(['single', 'sentinel', 'cluster']).default('single'),
    addresses: z.array(redisAddress).min(1, 'must name at least one Redis address').max(16, 'must name at most 16 addresses'),
    /** The primary's name in Sentinel (`sentinel monitor <name> ...`); sentinel mode only. */
    sentinel_master: z.string().trim().max(128).default(''),
    username: z.string().trim().max(128).default(''),
    /** Logical database; 0 in cluster mode (Redis Cluster has only 0). */
    db: z.number().int('must be an integer').min(0).max(15).default(0),
    tls: z.boolean().default(false),
    /** Name checked in the server's certificate (default: the address's host). */
    tls_server_name: z.string().trim().max(253).default(''),
    /** PEM of the CA that signed the Redis server's certificate (default: the system's roots). */
    tls_ca_pem: z.string().max(65_536).default(''),
    /** Every key the proxy writes starts with this (several fleets can share one Redis). */
    key_prefix: z
      .string()
      .trim()
      .max(64)
      .regex(/^[A-Za-z0-9._-]+$/, 'must be letters, digits, dot, dash or underscore')
      .default('caddy'),
    /** Encrypt every value at rest (AES-256-GCM, key from the secret setting proxy.storage.encryption_key). */
    encrypt: z.boolean().default(false),
  })
  .superRefine((v, ctx) => {
    if (v.mode === 'sentinel' && !v.sentinel_master)
      ctx.addIssue({
        code: 'custom',
        path: ['sentinel_master'],
        message: "must name the primary Sentinel watches (its 'sentinel monitor' name)",
      })
    if (v.mode === 'cluster' && v.db !== 0) ctx.addIssue({ code: 'custom', path: ['db'], message: 'must be 0 in cluster mode' })
  })

export const proxyStorageSchema = z.discriminatedUnion('module', [fileSystemStorageSchema, redisStorageSchema])
export type ProxyStorage = z.infer<typeof proxyStorageSchema>

/** What a node's admin API answers at GET /panel/storage/health (module admin.api.panel_storage). */
export interface NodeStorageHealthAnswer {
  /** The storage module the node runs: "panel_redis", "file_system", or another. */
  module: string
  ok: boolean
  /** Why not, in words (never a credential). */
  error: string | null
  /** One write, read and delete of a probe key. */
  latency_ms: number
  /** Where, in words: "sentinel primary mymaster at 10.0.0.5:6379", "folder /data/caddy". */
  detail: string
}

/** What a node's admin API answers at GET /panel/storage/certificates (503 {"error"} when the storage fails). */
export interface StorageCertificatesAnswer {
  certificates: Array<{
    /** certificates/<issuer key>/<name>/<name>.crt */
    key: string
    /** The name served, wildcard_ turned back into *. */
    name: string
    issuer_key: string
    not_after: string
    issuer: string
  }>
}

/** `storage` of each node in GET /api/nodes. ok null: not looked at yet, or the node's build lacks the module. */
export interface NodeStorageStatus {
  module: string | null
  ok: boolean | null
  error: string | null
  latency_ms: number | null
  checked_at: string | null
}
