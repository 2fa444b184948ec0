import { defineNitroPlugin, useStorage } from 'nitropack/runtime'
import { applyListenDefaults, getConfig } from '../utils/core/config'
import { keepRunningWithoutStandardOutput, logger } from '../utils/core/log'
import { closeDatabase, openDatabase } from '../utils/core/db'
import { parseMigrationFiles } from '../utils/core/migrations'
import { initSecretsBox, resolveMasterKey } from '../utils/core/secrets'
import { markBootFailed, markBootReady } from '../utils/core/boot'
import { loadStrictSessions } from '../utils/auth/strict-mode'
import { bootstrapAdminFromEnv } from '../utils/auth/login'
import { startRuntimeMonitors } from '../utils/ops/runtime-metrics'
import { importLegacyProviderAToken } from '../utils/hosts/dns-providers'
import { removeLegacyManualCertFiles } from '../utils/hosts/manual-certs'

async function _loadBundledMigrations() {
  const storage = useStorage('assets:migrations')
  const files: Record<string, string> = {}
  for (const key of await storage.getKeys()) files[key] = String(await storage.getItem(key))
  return parseMigrationFiles(files)
}

export default defineNitroPlugin((nitroApp) => {
  keepRunningWithoutStandardOutput()
  let config: ReturnType<typeof getConfig>
  try {
    config = getConfig()
  } catch (err) {
    // A bad environment must stop the process with every problem listed.
    logger.error((err as Error).message)
    process.exit(1)
  }
  applyListenDefaults(config)
  if (config.logLevel === 'debug') logger.level = 4
  startRuntimeMonitors()

  const boot = async () => {
    const master = resolveMasterKey(config.masterKey, config.dataDir)
    if (master.fromFile) {
      logger.warn(
        `PANEL_MASTER_KEY is not set: secrets are sealed with the generated key in ${config.dataDir}/master.key` +
          `${master.createdNow ? ' (created now)' : ''}. Back that file up, or set PANEL_MASTER_KEY.`,
      )
    }
    initSecretsBox(master.key)
    await openDatabase({ url: config.databaseUrl, authToken: config.databaseAuthToken, migrations: await _loadBundledMigrations() })
    // Strict session mode is read on every request (cookie names, ForwardAuth): known before the first.
    await loadStrictSessions()
    await bootstrapAdminFromEnv(config.adminEmail, config.adminPassword)
    await importLegacyProviderAToken()
    removeLegacyManualCertFiles()
  }
  boot().then(markBootReady, (err: Error) => {
    logger.error(`boot failed: ${err.message}`)
    markBootFailed(err)
    process.exitCode = 1
    setTimeout(() => process.exit(1), 100)
  })
  nitroApp.hooks.hook('close', () => closeDatabase())
})
