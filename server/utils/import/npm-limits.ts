/** Where an nginx-proxy-manager database is uploaded, and how large it may be (its audit log grows with use). */
export const NPM_IMPORT_PATH = '/api/import/npm'
export const NPM_DATABASE_LIMIT_BYTES = 64 * 1024 * 1024

/**
 * The most rows an import reads from each table: far above what one
 * nginx-proxy-manager manages, low enough that the plan (and the bcrypt hash
 * of every access list password, about 50 ms each) stays bounded.
 */
export const NPM_ROW_LIMITS = {
  proxy_host: 10_000,
  redirection_host: 10_000,
  dead_host: 10_000,
  stream: 10_000,
  access_list: 1_000,
  access_list_auth: 1_000,
  access_list_client: 10_000,
  certificate: 10_000,
} as const
