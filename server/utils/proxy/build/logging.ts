import { FORWARD_AUTH_PROBE_HOST } from './forward-auth'
import { STREAM_CONN_LOGGER, STREAM_LOG_FILE, STREAM_REFUSE_LOGGER } from './stream-logging'
import type { HostSnapshot, Json } from './types'

export const ACCESS_LOGGER = 'http.log.access'
export const ERROR_LOGGER = 'http.log.error'
/**
 * Caddy's own loggers whose lines the panel turns into events, written to the
 * error log with the handler errors (so the ingester reads them):
 * certificate obtain/renew failures ("could not get certificate from issuer")
 * -> cert_renewal_failed; active health check failures ("HTTP request failed",
 * "unexpected status code") -> target_unhealthy. Caddy 2.6.2's admin API
 * `/reverse_proxy/upstreams` shows only passive `fails`, not the active check's
 * verdict, so the log is the one source of both.
 */
export const PROXY_EVENT_LOGGERS = ['tls.obtain', 'tls.renew', 'http.handlers.reverse_proxy.health_checker']

/**
 * Access, error and default logs; the WAF writes its own audit file (see waf.ts). With streams
 * (`streams`: the configuration has a layer-4 app), the connection and refusal lines of the
 * stream handlers get their own file; without, the logging section keeps its bytes.
 */
export function buildLogging(logDir: string, streams = false): Json {
  const streamLoggers = streams ? [STREAM_CONN_LOGGER, STREAM_REFUSE_LOGGER] : []
  const logs: Json = {
    // Everything else (Caddy's own messages, WAF rule matches) goes to stderr.
    default: { exclude: [ACCESS_LOGGER, ERROR_LOGGER, ...PROXY_EVENT_LOGGERS, ...streamLoggers] },
    // `include` matches a logger and its children: http.log.access.host_<id> lands here too.
    access: { writer: { output: 'file', filename: `${logDir}/access.log` }, encoder: { format: 'json' }, include: [ACCESS_LOGGER] },
    // DEBUG: Caddy logs 4xx handler errors (WAF 403, rate-limit 429) at debug level (A7).
    error: {
      writer: { output: 'file', filename: `${logDir}/error.log` },
      encoder: { format: 'json' },
      level: 'DEBUG',
      include: [ERROR_LOGGER, ...PROXY_EVENT_LOGGERS],
    },
  }
  if (streams)
    logs.layer4 = {
      writer: { output: 'file', filename: `${logDir}/${STREAM_LOG_FILE}` },
      encoder: { format: 'json' },
      include: streamLoggers,
    }
  return { logs }
}

/** The logger suffix of a host: its lines come from `http.log.access.host_<id>` / `http.log.error.host_<id>`. */
export function hostLoggerName(host: Pick<HostSnapshot, 'id'>): string {
  return `host_${host.id}`
}

/**
 * Per-host logger names, so every access and error line says its host (the log
 * ingester reads the id from the logger name). Both servers get every host: the
 * plain server also answers TLS hosts (HTTP->HTTPS redirects, ACME http-01).
 *
 * Shape: a map host name -> one STRING. Caddy 2.6.2 declares `logger_names` as
 * map[string]string and rejects an array ("cannot unmarshal array into Go struct
 * field ServerLogConfig.servers.logs.logger_names of type string", seen against
 * the stock 2.6.2). Caddy 2.8.0 changed it to map[string]StringArray (caddy #6088),
 * whose unmarshaller still takes a single string, so a string works on 2.6 and 2.11.
 * `skip_hosts` is a list of names in both.
 */
export function buildServerLogs(hosts: HostSnapshot[]): Json {
  const loggerNames: Record<string, string> = {}
  for (const host of hosts) for (const name of [host.domain, ...host.aliases]) loggerNames[name] = hostLoggerName(host)
  // The panel's own ForwardAuth probe (forward-auth.ts) is not a visitor: not logged, not counted on the dashboards.
  return { logger_names: loggerNames, skip_hosts: [FORWARD_AUTH_PROBE_HOST] }
}
