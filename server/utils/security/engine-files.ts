import { readFileSync } from 'node:fs'
import { relative, resolve, isAbsolute } from 'node:path'
import { AsyncLocalStorage } from 'node:async_hooks'
import { getConfig } from '../core/config'
import { upstreamUnavailable } from '../core/errors'

// Files the panel writes into the engine's folders. Every path is resolved and
// checked to stay inside its folder: nothing outside it is ever written.

export function engineConfigDir(): string {
  const dir = getConfig().crowdsecConfigDir
  if (!dir) throw upstreamUnavailable('security engine', 'its config folder is not mounted (set CROWDSEC_CONFIG_DIR)')
  return resolve(dir)
}

export function insideFolder(folder: string, ...parts: string[]): string {
  const path = resolve(folder, ...parts)
  const rel = relative(folder, path)
  if (!rel || rel.startsWith('..') || isAbsolute(rel)) throw new Error(`refusing a path outside ${folder}`)
  return path
}

/** YAML double-quoted scalar (values are validated before; this only escapes). */
export const yamlString = (s: string) => JSON.stringify(s)

/** The file's text, or null when it does not exist. */
export function readFileOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
}

/**
 * What the drift detector did on one surface: the re-applications it made
 * (`target` names the file or scenario, `detail` says what was found and done)
 * and the differences it could not repair (with what the operator can do).
 */
export interface SurfaceCheck {
  repaired: Array<{ target: string; detail: string }>
  remaining: string[]
}
export const cleanCheck = (): SurfaceCheck => ({ repaired: [], remaining: [] })

// One change of the engine's files at a time: an API change (database commit,
// then file write) and a drift check never interleave, so the detector never
// "repairs" a file an API call was about to write (a false audit row).
// Re-entrant: a call made inside runs inline.
const _inside = new AsyncLocalStorage<true>()
let _tail: Promise<unknown> = Promise.resolve()

export function withEngineFiles<T>(fn: () => Promise<T>): Promise<T> {
  if (_inside.getStore()) return fn()
  const run = _tail.then(() => _inside.run(true, fn))
  _tail = run.catch(() => {})
  return run
}
