import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  resolve: { alias: { '~': fileURLToPath(new URL('.', import.meta.url)) } },
  test: {
    include: ['tests/**/*.test.ts'],
    // Integration files start real components and servers: one file at a time.
    fileParallelism: false,
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    globalSetup: ['tests/support/global-setup.ts'],
    setupFiles: ['tests/support/no-idle-reuse.ts', 'tests/support/file-teardown.ts', 'tests/support/contract-setup.ts'],
  },
})
