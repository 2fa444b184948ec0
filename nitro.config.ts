import { defineNitroConfig } from 'nitropack/config'
import { TASKS } from './server/utils/core/job-names'

export default defineNitroConfig({
  compatibilityDate: '2025-01-01',
  preset: 'node-server',
  srcDir: '.',
  scanDirs: ['server'],
  errorHandler: '~/server/error',
  experimental: { tasks: true },
  // Cron times are the process's time zone: run the panel with TZ=UTC (the image does).
  scheduledTasks: {
    '*/10 * * * *': [TASKS.authSweep],
    '0 3 5 * *': [TASKS.geoipRefresh],
    '0 */6 * * *': [TASKS.logsPrune],
    '0 4 1 * *': [TASKS.logsVacuum],
    // The stored backup.schedule is evaluated on every tick, so a new schedule applies at once.
    '*/5 * * * * *': [TASKS.backupsTick],
    '0 6 * * *': [TASKS.certsCheckExpiry],
  },
  // Migrations ship inside the bundle so the built server needs no source tree.
  serverAssets: [
    { baseName: 'migrations', dir: './db/migrations' },
    { baseName: 'ui', dir: './ui/dist-html', pattern: 'index.html' },
  ],
  // The web UI (built by scripts/build-ui.mjs first): files at `/`, deep links answered with index.html.
  publicAssets: [
    { dir: './ui/dist/assets', baseURL: '/assets', maxAge: 31536000 },
    { dir: './ui/dist', baseURL: '/' },
  ],
  handlers: [{ route: '/**', method: 'get', handler: '~/server/ui-fallback.ts' }],
  // Every import is explicit (project code, h3, nitropack/runtime): no auto-imports.
  imports: false,
  typescript: { strict: true },
})
