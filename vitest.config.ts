import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const root = fileURLToPath(new URL('.', import.meta.url))

/**
 * Files that make network namespaces (tests/support/netns.ts, directly or through the
 * edge stack or the fleet: the functions named below). Namespaces on 198.51.100.0/24 exist one set at a time on a
 * machine (a lock file), and Chromium aborts requests in flight when an interface
 * appears (net::ERR_NETWORK_CHANGED): these files and the browser files share one lane.
 */
function filesMakingNamespaces(): string[] {
  const uses = /\b(createPublicClientNamespace|createNodeNamespaces|startEdgeStack|startFleet)\(/
  const out: string[] = []
  for (const dir of ['tests/integration', 'tests/browser'])
    for (const f of readdirSync(`${root}${dir}`))
      if (f.endsWith('.test.ts') && uses.test(readFileSync(`${root}${dir}/${f}`, 'utf8'))) out.push(`${dir}/${f}`)
  return out
}
const namespaced = filesMakingNamespaces()

export default defineConfig({
  resolve: { alias: { '~': root } },
  test: {
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    globalSetup: ['tests/support/global-setup.ts'],
    setupFiles: ['tests/support/no-idle-reuse.ts', 'tests/support/file-teardown.ts', 'tests/support/contract-setup.ts'],
    // Integration files start real components and servers, and spend most of their time
    // waiting on them: scripts/test.sh runs the two lanes side by side, one vitest process
    // each (vitest itself runs every project that has one file at a time in a single
    // queue), so both cores are busy. Each lane runs one file at a time (docs/testing.md,
    // "Two lanes"); a plain `npx vitest run` runs both lanes one after the other.
    projects: [
      {
        extends: true,
        test: {
          name: 'namespaces and browser',
          include: [...namespaced, 'tests/browser/**/*.test.ts'],
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'the rest',
          include: ['tests/unit/**/*.test.ts', 'tests/integration/**/*.test.ts'],
          exclude: namespaced,
          fileParallelism: false,
        },
      },
    ],
  },
})
