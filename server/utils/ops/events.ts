import { EventEmitter } from 'node:events'
import { outsideWrite } from '../core/db'

// Panel events (spec "Events"): emitters call emitPanelEvent; the notification
// worker subscribes when it exists. Nothing here blocks the emitter.

export type PanelEventName =
  | 'backup_failed'
  | 'cert_renewal_failed'
  | 'cert_expiring_soon'
  | 'manual_cert_expiring_soon'
  | 'security_engine_down'
  | 'target_unhealthy'
  | 'health_degraded'
  | 'waf_attack_burst'
  | 'login_failed'
  | 'rate_limit_triggered'
  | 'config_change'
  // Only sent by a channel's Test button, never emitted on the bus nor selectable in a rule:
  // a receiver that routes by event must not take a test for a real change.
  | 'test'

export interface PanelEvent {
  name: PanelEventName
  at: string
  details: Record<string, unknown>
}

const _bus = new EventEmitter()
_bus.setMaxListeners(50)

export function emitPanelEvent(name: PanelEventName, details: Record<string, unknown> = {}): void {
  // Often raised inside a write transaction (an audit row): the listeners' writes queue behind it.
  outsideWrite(() => _bus.emit('event', { name, at: new Date().toISOString(), details } satisfies PanelEvent))
}

export function onPanelEvent(listener: (e: PanelEvent) => void): () => void {
  _bus.on('event', listener)
  return () => _bus.off('event', listener)
}
