import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Reader } from 'maxmind'
import { getConfig } from '../core/config'
import { countryOfRecord } from './walker'
import { isLanAddress } from './ip'
import { z } from 'zod'
import { ipOrCidrText } from '../core/validate'

// The geolocation databases, reopened when the file is replaced (a refresh
// renames a new file into place; the reader notices the new inode or mtime).

export type GeoKind = 'country' | 'asn'
interface _Open {
  reader: Reader<any>
  ino: number
  mtimeMs: number
  size: number
  checkedAtMs: number
}
const _open: Partial<Record<GeoKind, _Open>> = {}
const _RECHECK_MS = 5_000

export function geoFilePath(kind: GeoKind): string {
  return join(getConfig().dataDir, 'geoip', `${kind}.mmdb`)
}

export function openGeoReader(kind: GeoKind, force = false): Reader<any> | null {
  const path = geoFilePath(kind)
  const cur = _open[kind]
  if (cur && !force && Date.now() - cur.checkedAtMs < _RECHECK_MS) return cur.reader
  if (!existsSync(path)) {
    delete _open[kind]
    return null
  }
  const st = statSync(path)
  if (cur && cur.ino === st.ino && cur.mtimeMs === st.mtimeMs) {
    cur.checkedAtMs = Date.now()
    return cur.reader
  }
  try {
    _open[kind] = { reader: new Reader<any>(readFileSync(path)), ino: st.ino, mtimeMs: st.mtimeMs, size: st.size, checkedAtMs: Date.now() }
  } catch {
    delete _open[kind]
    return null
  }
  return _open[kind]!.reader
}

/** The database's version: its build time (RFC 3339), which changes with every release. */
export function geoVersion(reader: Reader<any>): string {
  const epoch = reader.metadata.buildEpoch as unknown
  return new Date(epoch instanceof Date ? epoch.getTime() : Number(epoch) * 1000).toISOString()
}

export function geoFileStatus(kind: GeoKind) {
  const reader = openGeoReader(kind)
  const o = _open[kind]
  if (!reader || !o)
    return {
      loaded: false,
      version: null,
      build_epoch: null,
      size_bytes: existsSync(geoFilePath(kind)) ? statSync(geoFilePath(kind)).size : null,
    }
  return {
    loaded: true,
    version: geoVersion(reader),
    build_epoch: Math.floor(new Date(geoVersion(reader)).getTime() / 1000),
    size_bytes: o.size,
  }
}

/** Country and ASN of an address; LAN addresses answer LAN / 0; unknown parts are null. */
/** GET /api/geoip/lookup; the address is parsed by node:net in the route's domain call. */
export const geoLookupQuery = z.strictObject({ ip: ipOrCidrText({ cidr: false }).describe('IPv4 or IPv6 address') })

export function lookupIp(ip: string): { ip: string; country: string | null; as_number: number | null; as_organization: string | null } {
  if (isLanAddress(ip)) return { ip, country: 'LAN', as_number: 0, as_organization: null }
  const country = openGeoReader('country')?.get(ip)
  const asn = openGeoReader('asn')?.get(ip) as any
  return {
    ip,
    country: countryOfRecord(country) ?? null,
    as_number: asn?.autonomous_system_number ?? null,
    as_organization: asn?.autonomous_system_organization ?? null,
  }
}
