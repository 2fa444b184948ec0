import { COUNTRIES, countryOption, resolveCountry } from '../countries'

// The geo and network policy of a host or a path rule as the API takes it
// (server/utils/access/schemas.ts, docs/access-control.md "Geo and network rules").
export type GeoRule = {
  action: 'allow' | 'deny'
  countries: string[]
  continents: string[]
  asns: number[]
  cidrs: string[]
  access_list_id: number | null
}
export type GeoPolicy = { rules: GeoRule[]; default: 'allow' | 'deny'; unknown_address: 'allow_lan' | 'allow' | 'deny' }

/** Continent codes of the country databases with the names the screen shows. */
export const CONTINENTS: Array<[string, string]> = [
  ['AF', 'Africa'],
  ['AN', 'Antarctica'],
  ['AS', 'Asia'],
  ['EU', 'Europe'],
  ['NA', 'North America'],
  ['OC', 'Oceania'],
  ['SA', 'South America'],
]
export const continentName = (code: string) => CONTINENTS.find(([c]) => c === code)?.[1] ?? code

export const blankGeoRule = (): GeoRule => ({ action: 'deny', countries: [], continents: [], asns: [], cidrs: [], access_list_id: null })
export const blankGeoPolicy = (): GeoPolicy => ({ rules: [blankGeoRule()], default: 'allow', unknown_address: 'allow_lan' })

/** A deep copy of a stored policy with every list present, so the form edits it without touching the record. */
export function geoPolicyOf(p: any): GeoPolicy | null {
  if (!p) return null
  return {
    rules: (p.rules ?? []).map((r: any) => ({
      ...blankGeoRule(),
      ...r,
      countries: [...(r.countries ?? [])],
      continents: [...(r.continents ?? [])],
      asns: [...(r.asns ?? [])],
      cidrs: [...(r.cidrs ?? [])],
    })),
    default: p.default ?? 'allow',
    unknown_address: p.unknown_address ?? 'allow_lan',
  }
}

export const COUNTRY_OPTIONS = COUNTRIES.map(countryOption)

/** The country a typed text names, or what to type instead. */
export function pickCountry(text: string): { value: string } | string {
  const c = resolveCountry(text)
  return c ? { value: c.code } : `"${text.trim()}" is no country: type a few letters of its name and choose it from the list.`
}

/** How a network is offered in the AS picker's list: "Hetzner Online GmbH (AS24940)". */
export const asnOption = (n: { asn: number; name: string | null }) => (n.name ? `${n.name} (AS${n.asn})` : `AS${n.asn}`)
/** How a chosen network is shown: "AS24940 Hetzner Online GmbH", the number alone when its name is unknown. */
export const asnLabel = (asn: number, name: string | null | undefined) => (name ? `AS${asn} ${name}` : `AS${asn}`)

/**
 * An AS number typed as 3320 or AS3320, picked from the list ("Hetzner Online GmbH (AS24940)"),
 * or a name typed in full that `byName` knows among the networks found for it.
 */
export function pickAsn(text: string, byName?: (name: string) => number | undefined): { value: number } | string {
  const m = /^\s*(?:as)?\s*(\d{1,10})\s*$/i.exec(text) ?? /\(AS(\d{1,10})\)\s*$/i.exec(text)
  const n = m ? Number(m[1]) : (byName?.(text.trim()) ?? NaN)
  return Number.isInteger(n) && n >= 1 && n <= 4_294_967_295
    ? { value: n }
    : `"${text.trim()}" is no network: type a few letters of its name and choose it from the list, or its number such as 3320.`
}

/** The addresses and ranges of the text field: one per line or comma separated. */
export const splitCidrs = (text: string) =>
  text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean)
