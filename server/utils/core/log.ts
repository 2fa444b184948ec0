import { createConsola } from 'consola'

/** The one logger. Nothing secret is ever passed to it (see docs/security.md). */
export const logger = createConsola({ level: process.env.PANEL_LOG_LEVEL === 'debug' ? 4 : 3 }).withTag('panel')
