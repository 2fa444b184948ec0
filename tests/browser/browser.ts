import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { makeTempDir } from '../support/processes'
import { REPO_ROOT } from '../support/build'

// Debian's Chromium driven by playwright-core (flags: shared docs, real-components §4).
export const CHROMIUM = '/usr/bin/chromium'
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
]
// The README's screenshots are rewritten only when asked (UPDATE_SCREENSHOTS=1), so
// that a test run leaves the checkout clean; otherwise they go to a temporary folder.
export const SCREENSHOT_DIR =
  process.env.UPDATE_SCREENSHOTS === '1' ? join(REPO_ROOT, 'docs/screenshots') : makeTempDir('panel-screenshots-')

/** `extraArgs`: flags for one suite (--host-resolver-rules for names under a test domain). */
export async function launchChromium(extraArgs: string[] = []): Promise<{ browser: BrowserContext; close(): Promise<void> }> {
  // A persistent context on a fresh profile folder: nothing from another run leaks in.
  const context = await chromium.launchPersistentContext(makeTempDir('chromium-profile-'), {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS, ...extraArgs],
    viewport: { width: 1280, height: 900 },
  })
  return { browser: context, close: () => context.close() }
}

/** Collects console errors and uncaught page errors; the tests fail on any. */
export function watchConsole(page: Page, into: string[]) {
  page.on('console', (m) => {
    if (m.type() !== 'error') return
    into.push(`${m.text()} @ ${m.location().url}`)
  })
  page.on('pageerror', (e) => into.push(`uncaught: ${e.message}`))
}

export async function screenshot(page: Page, name: string) {
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true })
}

/** The context's first page, its console watched into `consoleErrors`, with the suites' 15 s default timeout. */
export async function firstPage(chrome: { browser: BrowserContext }, consoleErrors: string[]): Promise<Page> {
  const page = chrome.browser.pages()[0] ?? (await chrome.browser.newPage())
  watchConsole(page, consoleErrors)
  page.setDefaultTimeout(15_000)
  return page
}
