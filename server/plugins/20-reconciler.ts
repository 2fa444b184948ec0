import { defineNitroPlugin } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { startReconcileLoop, stopReconcileLoop } from '../utils/proxy/loop'

export default defineNitroPlugin((nitroApp) => {
  whenBootReady().then(startReconcileLoop, () => {})
  nitroApp.hooks.hook('close', stopReconcileLoop)
})
