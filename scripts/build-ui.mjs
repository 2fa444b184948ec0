// Builds the web UI (ui/ -> ui/dist) with Vite; `npm run build`, `npm start` and the
// test harness run it before `nitro build`, which copies ui/dist into the output.
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'vite'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
await build({ configFile: join(root, 'ui/vite.config.ts'), logLevel: process.env.UI_BUILD_QUIET ? 'warn' : 'info' })
