import { defineNitroPlugin } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { startEngineProbe, stopEngineProbe } from '../utils/security/engine-health'

export default defineNitroPlugin((nitroApp) => {
  whenBootReady().then(startEngineProbe, () => {})
  nitroApp.hooks.hook('close', stopEngineProbe)
})
