import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

// Benchmarks print figures against the design's budgets; they assert nothing about time.
export default defineConfig({
  resolve: { alias: { '~': fileURLToPath(new URL('..', import.meta.url)) } },
  test: {
    include: ['bench/**/*.bench.ts'],
    fileParallelism: false,
    pool: 'forks',
    testTimeout: 600_000,
    hookTimeout: 300_000,
    globalSetup: ['tests/support/global-setup.ts'],
    setupFiles: ['tests/support/file-teardown.ts'],
  },
})
