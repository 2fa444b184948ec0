import { chmodSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, relative, resolve, isAbsolute } from 'node:path'
import { getConfig } from '../core/config'
import { upstreamUnavailable } from '../core/errors'

// Files the panel writes into the engine's folders. Every path is resolved and
// checked to stay inside its folder: nothing outside it is ever written.

export function engineConfigDir(): string {
  const dir = getConfig().crowdsecConfigDir
  if (!dir) throw upstreamUnavailable('security engine', "its config folder is not mounted (set CROWDSEC_CONFIG_DIR)")
  return resolve(dir)
}

export function insideFolder(folder: string, ...parts: string[]): string {
  const path = resolve(folder, ...parts)
  const rel = relative(folder, path)
  if (!rel || rel.startsWith('..') || isAbsolute(rel)) throw new Error(`refusing a path outside ${folder}`)
  return path
}

export function writeFileAtomically(path: string, content: string, mode = 0o644): void {
  mkdirSync(dirname(path), { recursive: true })
  const tmp = `${path}.panel-tmp`
  writeFileSync(tmp, content, { mode })
  chmodSync(tmp, mode)
  renameSync(tmp, path)
}

/** YAML double-quoted scalar (values are validated before; this only escapes). */
export const yamlString = (s: string) => JSON.stringify(s)
