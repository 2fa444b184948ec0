import type { HostSnapshot, Json } from './types'

export const ACCESS_LOGGER = 'http.log.access'
export const ERROR_LOGGER = 'http.log.error'

/** Access, error and default logs; the WAF writes its own audit file (see waf.ts). */
export function buildLogging(logDir: string): Json {
  return {
    logs: {
      default: { exclude: [ACCESS_LOGGER, ERROR_LOGGER] },
      access: { writer: { output: 'file', filename: `${logDir}/access.log` }, encoder: { format: 'json' }, include: [ACCESS_LOGGER] },
      // DEBUG: Caddy logs 4xx handler errors (WAF 403, rate-limit 429) at debug level (A7).
      error: { writer: { output: 'file', filename: `${logDir}/error.log` }, encoder: { format: 'json' }, level: 'DEBUG', include: [ERROR_LOGGER] },
    },
  }
}

/**
 * Per-host logger names, so every access line says its host: `http.log.access.host_<id>`.
 * Caddy 2.6 reads `logger_names` as host -> string; later versions take an array
 * but still accept a single string, so a string works for both.
 */
export function buildServerLogs(hosts: HostSnapshot[]): Json {
  const loggerNames: Record<string, string> = {}
  for (const host of hosts) for (const name of [host.domain, ...host.aliases]) loggerNames[name] = `host_${host.id}`
  return { logger_names: loggerNames }
}
