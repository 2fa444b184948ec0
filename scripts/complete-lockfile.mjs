// The package registry reachable here serves only some of the per-platform builds
// of rollup and of the @node-rs packages (argon2, bcrypt), so `npm install` writes a lockfile without the others and `npm ci`
// then refuses it ("Missing: @rollup/rollup-… from lock file"). This adds the
// missing optional entries with their os/cpu/libc, which npm skips on other
// platforms exactly as it would with a lockfile written elsewhere.
// Run after any `npm install` that rewrites package-lock.json.
import { readFileSync, writeFileSync } from 'node:fs'

const path = new URL('../package-lock.json', import.meta.url)
const lock = JSON.parse(readFileSync(path, 'utf8'))
const PLATFORM =
  /^@(?:rollup\/rollup|node-rs\/[a-z0-9]+)-(android|darwin|freebsd|linux|openbsd|openharmony|win32)-(arm64|arm|x64|ia32|loong64|ppc64|riscv64|s390x)(?:-(gnueabihf|musleabihf|gnu|musl|msvc|eabi))?$/
let added = 0
for (const entry of Object.values(lock.packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const m = PLATFORM.exec(dep)
    const target = `node_modules/${dep}`
    if (!m || lock.packages[target]) continue
    const [, os, cpu, abi] = m
    const libc = abi?.startsWith('musl') ? ['musl'] : abi && ['gnu', 'gnueabihf'].includes(abi) ? ['glibc'] : undefined
    lock.packages[target] = { version, cpu: [cpu], ...(libc ? { libc } : {}), license: 'MIT', optional: true, os: [os] }
    added++
  }
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))))
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`)
console.log(`added ${added} optional platform entries`)
