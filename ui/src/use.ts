import { onBeforeUnmount, ref } from 'vue'
import { api, errorText, type Query } from './api'
import { humanizeError, type FieldErrors } from './fields'

export type Msg = { kind: 'ok' | 'warn' | 'error'; text: string } | null

/** A GET whose loading/error/data drive a block; reload() refetches. */
export function useLoad<T>(path: () => string, query?: () => Query) {
  const data = ref<T | null>(null)
  const loading = ref(true)
  const error = ref<string | null>(null)
  async function reload() {
    error.value = null
    try {
      data.value = await api<T>(path(), { query: query?.() })
    } catch (e) {
      error.value = errorText(e)
    } finally {
      loading.value = false
    }
  }
  reload()
  return { data, loading, error, reload }
}

/**
 * Runs a mutation and keeps its outcome as a message: saved, pending reconcile, or the API's error.
 * With `fields`, a refusal that names a field of the form is shown at that field instead of as a banner.
 */
export function useAction(fields?: FieldErrors) {
  const busy = ref(false)
  const msg = ref<Msg>(null)
  // `about`: the name of the object saved; the proxy's warnings then keep only the ones
  // that name it (a save used to repeat every other host's warnings as if they were its own).
  async function run<T>(fn: () => Promise<T>, okText: string | ((r: T) => string), opts: { about?: string } = {}): Promise<T | undefined> {
    busy.value = true
    msg.value = null
    fields?.reset()
    try {
      const r = await fn()
      const rec = (r as any)?.reconcile
      const text = typeof okText === 'function' ? okText(r) : okText
      const warnings: string[] = (rec?.warnings ?? []).filter((w: string) => !opts.about || w.split(/[\s,;:()]+/).includes(opts.about))
      if (rec?.status === 'pending')
        msg.value = {
          kind: 'warn',
          text: `${text} The proxy could not be reached, so the change is pending and will be applied when it answers${rec.error ? `: ${rec.error}` : '.'}`,
        }
      else msg.value = warnings.length ? { kind: 'warn', text: `${text} Warnings: ${warnings.join('; ')}` } : { kind: 'ok', text }
      return r
    } catch (e) {
      if (!fields?.show(e)) msg.value = { kind: 'error', text: humanizeError(errorText(e)) }
      return undefined
    } finally {
      busy.value = false
    }
  }
  return { busy, msg, run }
}

/** Calls fn every `ms` while the screen is open (and once now). */
export function usePoll(fn: () => unknown, ms: number) {
  fn()
  const timer = setInterval(fn, ms)
  onBeforeUnmount(() => clearInterval(timer))
}

export { api }
