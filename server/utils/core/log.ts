import { createConsola } from 'consola'

/** The one logger. Nothing secret is ever passed to it (see docs/security.md). */
export const logger = createConsola({ level: process.env.PANEL_LOG_LEVEL === 'debug' ? 4 : 3 }).withTag('panel')

/**
 * A standard output or error whose reader is gone (a log collector that died, a parent that
 * exited without stopping the panel) fails each write with EPIPE. Unhandled, that failure is an
 * uncaught exception, which Nitro reports by writing to the same closed stream, and so on: the
 * panel spun at full CPU, its heap grew by a gigabyte a minute, and it did not answer SIGTERM
 * (seen when a benchmark's runner died under a running panel). With a listener the failure is
 * only an event; the stream is then destroyed and later writes are dropped, while the panel
 * goes on serving (its log is lost, there being nowhere left to write it).
 */
export function keepRunningWithoutStandardOutput(): void {
  for (const stream of [process.stdout, process.stderr]) stream.on('error', _dropOutputError)
}

function _dropOutputError(): void {}
