// Streams (docs/streams.md) in words: the API keeps its field values (one_to_one, v2,
// engine_down_refuse...); the Streams screen shows these.

export const RANGE_MAPPING_WORDS: Record<string, string> = {
  one_to_one: "Each port to the target's port plus its place in the range",
  all_to_one: "Every port to the target's one port",
}

export const PROXY_PROTOCOL_WORDS: Record<string, string> = {
  off: 'Off (the upstream sees the proxy as the client)',
  v1: 'Version 1 (text)',
  v2: 'Version 2 (binary)',
}

/** The listen port or range, with the mapping of a range in a few words. */
export function portsText(s: { listen_port: number; listen_port_end: number | null; range_mapping: string }): string {
  if (s.listen_port_end == null) return String(s.listen_port)
  const how = s.range_mapping === 'all_to_one' ? 'all to one port' : 'each to its own port'
  return `${s.listen_port} to ${s.listen_port_end} (${how})`
}

/** What protects a stream, in words: "LAN only, access list staff, bans refused". */
export function protectionWords(
  s: { lan_only: boolean; access_list_id: number | null; bouncer_enabled: boolean; engine_down_refuse: boolean },
  listName: Map<number, string>,
): string {
  const parts: string[] = []
  if (s.lan_only) parts.push('LAN only')
  if (s.access_list_id != null) parts.push(`access list ${listName.get(s.access_list_id) ?? 'deleted'}`)
  if (s.bouncer_enabled) parts.push('bans refused')
  if (s.engine_down_refuse) parts.push('everything refused while the security engine is down')
  return parts.length ? parts.join(', ') : 'none'
}

export interface StreamTargetHealth {
  address: string
  state: 'healthy' | 'unhealthy' | 'unknown'
  cause?: string | null
  since?: string | null
}

/**
 * GET /api/streams/health by stream id. Read tolerantly: a list of `{id|stream_id, targets}`
 * or an object keyed by stream id; anything else is "no health known" (every target Unknown).
 */
export function normalizeStreamHealth(answer: unknown): Map<number, StreamTargetHealth[]> {
  const out = new Map<number, StreamTargetHealth[]>()
  const rows: unknown[] = Array.isArray(answer)
    ? answer
    : answer && typeof answer === 'object'
      ? Array.isArray((answer as any).streams)
        ? (answer as any).streams
        : Object.entries(answer).map(([id, v]) =>
            Array.isArray(v) ? { id: Number(id), targets: v } : { id: Number(id), ...(v as object) },
          )
      : []
  for (const row of rows as any[]) {
    const id = Number(row?.stream_id ?? row?.id)
    if (!Number.isInteger(id) || !Array.isArray(row?.targets)) continue
    out.set(
      id,
      row.targets.map((t: any) => ({
        address: String(t.address ?? t.dial ?? ''),
        state:
          t.state === 'healthy' || t.state === 'unhealthy'
            ? t.state
            : t.healthy === true
              ? 'healthy'
              : t.healthy === false
                ? 'unhealthy'
                : 'unknown',
        cause: t.cause ?? null,
        since: t.since ?? null,
      })),
    )
  }
  return out
}
