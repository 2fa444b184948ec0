import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { AxeBuilder } from '@axe-core/playwright'
import { makeTempDir } from '../support/processes'
import { REPO_ROOT } from '../support/build'
import { ADMIN } from '../support/panel'

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

export const PHONE = { width: 390, height: 844 }
export const DESK = { width: 1280, height: 900 }

/** Serious and critical axe violations (WCAG 2.x A and AA rules), one line each, prefixed with `where`. */
export async function axeProblems(page: Page, where: string): Promise<string[]> {
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze()
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${where}: ${v.id} (${v.impact}) ${v.nodes
          .slice(0, 3)
          .map((n) => n.target.join(' '))
          .join(' | ')}`,
    )
}

/**
 * axe on the page as it stands, at 390 and 1280 px in the light and the dark theme (width and
 * colour scheme are media features the page follows without a reload, so the state a test built
 * up is kept). Leaves the page at the desk width in the light theme.
 */
export async function axeProblemsInBothThemesAndWidths(page: Page, where: string): Promise<string[]> {
  const problems: string[] = []
  for (const size of [PHONE, DESK]) {
    for (const scheme of ['dark', 'light'] as const) {
      await page.setViewportSize(size)
      await page.emulateMedia({ colorScheme: scheme })
      await page.waitForFunction((s) => document.documentElement.dataset.theme === s, scheme)
      problems.push(...(await axeProblems(page, `${where} ${size.width}px ${scheme}`)))
    }
  }
  return problems
}

/** Signs the page in as the suites' admin through the login screen, and waits to leave it. */
export async function signInAsAdmin(page: Page, panelUrl: string): Promise<void> {
  await page.goto(`${panelUrl}/login`)
  await page.getByLabel('Email').fill(ADMIN.email)
  await page.getByLabel('Password').fill(ADMIN.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL((u) => !u.pathname.startsWith('/login'))
}
