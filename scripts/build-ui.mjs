// Builds the web UI (ui/ -> ui/dist) with Vite; `npm run build`, `npm start` and the
// test harness run it before `nitro build`, which copies ui/dist into the output.
import { mkdirSync, renameSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'vite'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
await build({ configFile: join(root, 'ui/vite.config.ts'), logLevel: process.env.UI_BUILD_QUIET ? 'warn' : 'info' })

// index.html is not a public file: the fallback handler (server/ui-fallback.ts)
// serves it for every page, with the session hint filled in.
mkdirSync(join(root, 'ui/dist-html'), { recursive: true })
renameSync(join(root, 'ui/dist/index.html'), join(root, 'ui/dist-html/index.html'))
