/** Where an nginx-proxy-manager database is uploaded, and how large it may be (its audit log grows with use). */
export const NPM_IMPORT_PATH = '/api/import/npm'
export const NPM_DATABASE_LIMIT_BYTES = 64 * 1024 * 1024
