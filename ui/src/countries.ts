import countries from 'i18n-iso-countries'
import en from 'i18n-iso-countries/langs/en.json'

// The country picker's list: ISO 3166-1 alpha-2 codes with their English names and
// common aliases (i18n-iso-countries, a maintained copy of the standard), loaded
// only with the screens that pick a country.
countries.registerLocale(en)

export interface Country {
  code: string
  name: string
  aliases: string[]
}

export const COUNTRIES: Country[] = Object.entries(countries.getNames('en', { select: 'all' }))
  .map(([code, names]) => ({ code, name: names[0]!, aliases: names.slice(1) }))
  .sort((a, b) => a.name.localeCompare(b.name))

/** What the picker shows and gives back: "Luxembourg (LU)". */
export const countryOption = (c: Country) => `${c.name} (${c.code})`

const norm = (s: string) =>
  s
    .trim()
    .toLowerCase()
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')

/**
 * The country a typed text means: an option as the list shows it ("Germany (DE)"),
 * a name or alias ("Germany", "USA"), or an exact code ("DE"). Nothing else is
 * guessed: "Ger" or "Deutschland" resolve to nothing, so the form asks again.
 */
export function resolveCountry(text: string): Country | null {
  const t = norm(text)
  if (!t) return null
  const byOption = /^(.*)\(([a-z]{2})\)$/.exec(t)
  if (byOption) return COUNTRIES.find((c) => c.code.toLowerCase() === byOption[2]) ?? null
  return (
    COUNTRIES.find((c) => norm(c.name) === t || c.aliases.some((a) => norm(a) === t)) ??
    COUNTRIES.find((c) => c.code.toLowerCase() === t) ??
    null
  )
}
