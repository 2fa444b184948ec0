// The only way the UI talks to the panel: the public /api/* routes with the
// session cookie. Every failure becomes an ApiError carrying the API's {error} text.
export class ApiError extends Error {
  constructor(
    public status: number,
    message: string,
  ) {
    super(message)
  }
}

let onUnauthorized: (() => void) | null = null
export function setUnauthorizedHandler(fn: () => void) {
  onUnauthorized = fn
}

export type Query = Record<string, string | number | boolean | undefined | null | Array<string | number>>

export function toQuery(query: Query = {}): string {
  const p = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '') continue
    p.set(k, Array.isArray(v) ? v.join(',') : String(v))
  }
  const s = p.toString()
  return s ? `?${s}` : ''
}

type ApiOptions = { method?: string; body?: unknown; form?: FormData; query?: Query }

// The requests under way, so that signing out can cancel them first: one still running when the
// session ends would come back 401 (a failed load in the console, a flash of an error on the screen).
const _pending = new Set<AbortController>()

/** Cancels every request under way (before signing out); each rejects with status 0. */
export function abortPendingRequests(): void {
  for (const controller of _pending) controller.abort()
  _pending.clear()
}

/** The answer and its headers (paged lists carry their cursor and total there). */
export async function apiWithHeaders<T = any>(path: string, opts: ApiOptions = {}): Promise<{ data: T; headers: Headers }> {
  const init: RequestInit = { method: opts.method ?? 'GET', credentials: 'same-origin', headers: { accept: 'application/json' } }
  if (opts.form) {
    init.body = opts.form
    // An HTML form can post multipart too; the panel takes a cookie upload only with this header, which no form can send.
    ;(init.headers as Record<string, string>)['x-panel-request'] = '1'
  } else if (opts.body !== undefined) {
    init.body = JSON.stringify(opts.body)
    ;(init.headers as Record<string, string>)['content-type'] = 'application/json'
  }
  const controller = new AbortController()
  init.signal = controller.signal
  _pending.add(controller)
  let res: Response
  let text: string
  try {
    res = await fetch(path + toQuery(opts.query), init)
    text = res.status === 204 ? '' : await res.text()
  } catch {
    throw new ApiError(0, controller.signal.aborted ? 'cancelled' : 'the panel cannot be reached: check your connection')
  } finally {
    _pending.delete(controller)
  }
  if (res.status === 204) return { data: null as T, headers: res.headers }
  let json: any = null
  try {
    json = text ? JSON.parse(text) : null
  } catch {
    /* not JSON */
  }
  if (!res.ok) {
    if (res.status === 401 && !path.startsWith('/api/auth/') && !path.startsWith('/api/setup')) onUnauthorized?.()
    throw new ApiError(res.status, json?.error ?? `request failed with HTTP ${res.status}`)
  }
  return { data: json as T, headers: res.headers }
}

export async function api<T = any>(path: string, opts: ApiOptions = {}): Promise<T> {
  return (await apiWithHeaders<T>(path, opts)).data
}

export const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e))
