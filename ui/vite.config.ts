import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'
import vue from '@vitejs/plugin-vue'

// The SPA is built into ui/dist; nitro.config.ts serves that folder at `/` and
// answers deep links with index.html. Routes are split per screen, so the first
// screen only loads Vue, the router and the login view.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  plugins: [vue()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    reportCompressedSize: true,
    chunkSizeWarningLimit: 300,
  },
  server: { proxy: { '/api': 'http://127.0.0.1:3000' } },
})
