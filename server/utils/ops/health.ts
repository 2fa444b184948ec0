import { statSync } from 'node:fs'
import { getConfig } from '../core/config'
import { readClientAddressHealth } from '../core/request'
import { filePathOfUrl, getDatabaseUrl, writeQueueDepth } from '../core/db'
import { bootStartedAtMs } from '../core/boot'
import { readRuntimeMetrics } from './runtime-metrics'
import { PANEL_VERSION } from '../core/version'
import { readBackgroundRuns } from '../core/runtime-state'
import { listHealthProblems } from './problems'

const _sizeOf = (path: string) => {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}

type HealthSection = () => Promise<Record<string, unknown>> | Record<string, unknown>
const _sections = new Map<string, HealthSection>()

/** Subsystems add their part of /api/system/health, each from its plugin (server/plugins/). */
export function registerSystemHealthSection(name: string, section: HealthSection): void {
  _sections.set(name, section)
}

export function readDatabaseHealth() {
  const path = filePathOfUrl(getDatabaseUrl() ?? '')
  // libSQL's client does not expose its pool; the embedded client holds one
  // connection per concurrent statement, and every write waits in our queue.
  const waiting = writeQueueDepth()
  return {
    open_connections: 1,
    idle: waiting ? 0 : 1,
    in_use: waiting ? 1 : 0,
    write_queue_waiting: waiting,
    file_size_bytes: path ? _sizeOf(path) : null,
    wal_size_bytes: path ? _sizeOf(`${path}-wal`) : null,
  }
}

export async function readSystemHealth() {
  const cfg = getConfig()
  const out: Record<string, unknown> = {
    ...readRuntimeMetrics(),
    db: readDatabaseHealth(),
    panel: {
      mode: cfg.mode,
      domain: cfg.domain,
      uptime_seconds: Math.round((Date.now() - bootStartedAtMs) / 1000),
      version: PANEL_VERSION,
    },
    // Whether the panel sees visitors' addresses or only a proxy's (login throttle, audit rows).
    client_addresses: readClientAddressHealth(),
    // The last run of every task and loop of this process (core/background.ts).
    background: readBackgroundRuns(),
  }
  for (const [name, section] of _sections) out[name] = await section()
  // The same list as /api/dashboard/health: what is wrong and where it is fixed.
  out.problems = await listHealthProblems()
  return out
}
