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

export function snakeCaseKeys<T extends object>(row: T): SnakeCased<T> {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(row)) out[key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = value
  return out as SnakeCased<T>
}

export function camelCaseKeys<T extends object>(fields: T): CamelCased<T> {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(fields)) out[key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())] = value
  return out as CamelCased<T>
}
