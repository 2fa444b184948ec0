// Database rows use camelCase properties (db/schema.ts), the API and the proxy
// snapshot snake_case fields (the zod schemas). One mapping, key by key, so a
// field is declared in the schema and the table only: the types below make the
// compiler compare the two, and a column missing on either side fails the type check.

type _SnakeCase<S extends string> = S extends `${infer Head}${infer Tail}`
  ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${_SnakeCase<Tail>}`
  : S
type _CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<_CamelCase<Tail>>}` : S

export type SnakeCased<T> = { [K in keyof T as K extends string ? _SnakeCase<K> : never]: T[K] }
export type CamelCased<T> = { [K in keyof T as K extends string ? _CamelCase<K> : never]: T[K] }

/** True when A and B have exactly the same keys (a compile-time check used beside the mappers). */
export type SameKeys<A, B> = [keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false

// Each key is converted once: the proxy snapshot and the revision's desired state map every
// host row on every push, and a regular expression per key per row cost 8 ms a push at 1,000 hosts.
// Keys are column and field names; the cap keeps arbitrary keys from growing the caches.
const _CACHED_KEYS_AT_MOST = 2_000
function _cachedKey(cache: Map<string, string>, key: string, convert: (key: string) => string): string {
  let converted = cache.get(key)
  if (converted === undefined) {
    converted = convert(key)
    if (cache.size < _CACHED_KEYS_AT_MOST) cache.set(key, converted)
  }
  return converted
}
const _snakeKeys = new Map<string, string>(),
  _camelKeys = new Map<string, string>()
const _toSnake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
const _toCamel = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())

export function snakeCaseKeys<T extends object>(row: T): SnakeCased<T> {
  const out: Record<string, unknown> = {}
  for (const key in row) if (Object.hasOwn(row, key)) out[_cachedKey(_snakeKeys, key, _toSnake)] = row[key]
  return out as SnakeCased<T>
}

export function camelCaseKeys<T extends object>(fields: T): CamelCased<T> {
  const out: Record<string, unknown> = {}
  for (const key in fields) if (Object.hasOwn(fields, key)) out[_cachedKey(_camelKeys, key, _toCamel)] = fields[key]
  return out as CamelCased<T>
}
