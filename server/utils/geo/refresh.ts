import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { gunzipSync } from 'node:zlib'
import { Reader } from 'maxmind'
import { getDb, runWrite } from '../core/db'
import { getSetting } from '../core/settings'
import { readRuntimeState, writeRuntimeState } from '../core/runtime-state'
import { writeAudit, type AuditContext } from '../core/audit'
import { logger } from '../core/log'
import { writeFileAtomically } from '../core/files'
import { upstreamFailed } from '../core/errors'
import { geoFilePath, geoFileStatus, openGeoReader, type GeoKind } from './readers'
import { fetchFailureCause, geoDownloadFailure } from './download-errors'

// Downloads country.mmdb and asn.mmdb (plain or gzip), checks that each opens
// and answers a lookup, then renames it into place: a failed download never
// replaces a working file.

const _STATE = 'geoip.refresh'
const _MAX_BYTES = 256 * 1024 * 1024
const _TIMEOUT_MS = 120_000
const _KINDS: GeoKind[] = ['country', 'asn']

interface RefreshState {
  last_refresh_at: string | null
  last_refresh_status: 'ok' | 'failed' | 'never'
  errors: Partial<Record<GeoKind, string>>
}

/** The file's bytes; a failure's message is the cause alone (the caller names the URL and the setting). */
async function _download(url: string): Promise<Buffer> {
  let res: Response
  let body: Buffer
  try {
    if (url.startsWith('file:')) return readFileSync(fileURLToPath(url))
    res = await fetch(url, { signal: AbortSignal.timeout(_TIMEOUT_MS) })
    if (!res.ok) throw new Error(`it answered ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`)
    body = Buffer.from(await res.arrayBuffer())
  } catch (err) {
    if ((err as Error).message?.startsWith('it answered')) throw err
    throw new Error(fetchFailureCause(err))
  }
  if (body.length > _MAX_BYTES) throw new Error(`the file is larger than ${_MAX_BYTES / 1024 / 1024} MiB`)
  return body
}

/** The bytes as an opened, answering database (gunzipped when needed), or an error naming what failed. */
export function checkMmdb(bytes: Buffer): Buffer {
  const data = bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes
  let reader: Reader<any>
  try {
    reader = new Reader<any>(data)
  } catch (err) {
    throw new Error(`not a MaxMind database: ${(err as Error).message}`)
  }
  reader.get('1.1.1.1') // throws on a corrupt tree
  return data
}

export async function refreshGeoDatabases(ctx: AuditContext): Promise<RefreshState> {
  const urls: Record<GeoKind, string> = {
    country: await getSetting<string>('geoip.country_url'),
    asn: await getSetting<string>('geoip.asn_url'),
  }
  const errors: Partial<Record<GeoKind, string>> = {}
  for (const kind of _KINDS) {
    try {
      if (!urls[kind]) throw new Error('no URL')
      const data = checkMmdb(await _download(urls[kind]))
      const path = geoFilePath(kind)
      writeFileAtomically(path, data)
      openGeoReader(kind, true)
    } catch (err) {
      // Whether a working file stays in use decides the sentence: never claim one that is not there.
      errors[kind] = geoDownloadFailure(kind, urls[kind], (err as Error).message, !!openGeoReader(kind))
      logger.warn(`geolocation download failed: ${errors[kind]}`)
    }
  }
  const state: RefreshState = {
    last_refresh_at: new Date().toISOString(),
    last_refresh_status: Object.keys(errors).length ? 'failed' : 'ok',
    errors,
  }
  await runWrite(async () => {
    await writeRuntimeState(getDb(), _STATE, state)
    await writeAudit(ctx, 'geoip_refresh', { status: state.last_refresh_status, failed: Object.keys(errors) })
  })
  if (Object.keys(errors).length && ctx.actor !== 'system:geoip-refresh') {
    throw upstreamFailed(`geolocation download failed. ${Object.values(errors).join(' ')}`)
  }
  return state
}

export async function readGeoStatus() {
  const state = (await readRuntimeState<RefreshState>(_STATE)) ?? { last_refresh_at: null, last_refresh_status: 'never', errors: {} }
  return {
    country: geoFileStatus('country'),
    asn: geoFileStatus('asn'),
    last_refresh_at: state.last_refresh_at,
    last_refresh_status: state.last_refresh_status,
    last_refresh_errors: state.errors,
  }
}

export function geoFileMissing(): boolean {
  return _KINDS.some((k) => !openGeoReader(k))
}
