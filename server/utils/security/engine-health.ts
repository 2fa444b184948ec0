import { writeAudit, systemActor } from '../core/audit'
import { getConfig } from '../core/config'
import { getSetting } from '../core/settings'
import { parseGoDurationMs } from '../core/validate'
import { logger } from '../core/log'
import { emitPanelEvent } from '../ops/events'
import { startLoop, type Loop } from '../core/background'
import { fetchBannedSources, probeEngine } from './lapi'
import { rememberBannedSources } from './known-bans'
import { mirrorEnabled } from './mirror'
import { redactSecrets } from '../core/redact'
import { LOOPS } from '../core/job-names'

const _KNOWN_BANS_MAX_TICKER_MS = 50_000

let _state: { reachable: boolean | null; checked_at: string | null; since: string | null; error: string | null } = {
  reachable: null,
  checked_at: null,
  since: null,
  error: null,
}

export function securityEngineHealth() {
  return { ..._state }
}

/** One probe; a change of state is logged, audited and emitted (security_engine_down). */
export async function probeSecurityEngine(): Promise<void> {
  const probe = await probeEngine()
  const up = probe.up
  const error = probe.error && (await redactSecrets(probe.error))
  const now = new Date().toISOString()
  const changed = _state.reachable !== up
  _state = { reachable: up, checked_at: now, since: changed ? now : _state.since, error }
  // While the engine answers, every probe also reads the bans it holds, for the day it does not
  // (known-bans.ts). Only while the proxy's bouncer pulls at least every 50 s: a read with the
  // bouncer's key moves its "last pull" when that is over a minute old, and the bouncer's next
  // pull would then miss what came in between (docs/security-engine.md). Pushes read them too.
  // With the decision mirror there is nothing to read: it holds them (known-bans.ts).
  const ticker = parseGoDurationMs(await getSetting<string>('security_engine.ticker_interval')) ?? Infinity
  if (up && !mirrorEnabled() && ticker <= _KNOWN_BANS_MAX_TICKER_MS) {
    try {
      rememberBannedSources(await fetchBannedSources({ timeoutMs: 5_000 }))
    } catch (err) {
      logger.warn(`reading the engine's bans: ${await redactSecrets((err as Error).message)}`)
    }
  }
  if (!changed) return
  if (up) {
    logger.info('security engine reachable')
    await writeAudit(systemActor('engine-probe'), 'security_engine_up', {})
  } else {
    logger.warn(`security engine down: ${error}`)
    await writeAudit(systemActor('engine-probe'), 'security_engine_down', { error })
    emitPanelEvent('security_engine_down', { error })
  }
}

export function startEngineProbe(): Loop {
  return startLoop(LOOPS.securityEngineProbe, {
    run: probeSecurityEngine,
    nextDelayMs: () => getConfig().engineProbeSeconds * 1000,
    onFailure: (err) => logger.error(`engine probe: ${(err as Error).message}`),
  })
}
