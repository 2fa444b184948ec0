import type { CompiledFilter } from './filters'
import type { PresentedLog } from './hub'

/**
 * The live tail's event for a row. Without a source filter the list shows one row per
 * request (query.ts listFilter), so a WAF or error row folded into its access row is sent
 * as `folded` (its id and the access row's), which tells a viewer to drop it if shown.
 */
export function tailEventOf(filter: CompiledFilter, row: PresentedLog & { request_log_id?: number | null }) {
  if (!filter.dims.has('source') && row.request_log_id != null)
    return { event: 'folded', id: String(row.id), data: JSON.stringify({ id: row.id, request_log_id: row.request_log_id }) }
  return { event: 'log', id: String(row.id), data: JSON.stringify(row) }
}
