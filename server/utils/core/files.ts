import { chmodSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'

/**
 * Writes a file that readers (the proxy, the engine, the panel after a restart)
 * see whole or not at all: a temporary file beside it, then a rename. The
 * temporary name ends in neither .yaml nor .crt, so no folder scan picks it up;
 * the process id keeps two panels on one volume from sharing it.
 */
export function writeFileAtomically(path: string, content: string | Uint8Array, mode = 0o644): void {
  mkdirSync(dirname(path), { recursive: true })
  const tmp = `${path}.panel-tmp-${process.pid}`
  writeFileSync(tmp, content, { mode })
  chmodSync(tmp, mode) // writeFileSync's mode is filtered by the umask; the key must be 0600 exactly
  renameSync(tmp, path)
}
