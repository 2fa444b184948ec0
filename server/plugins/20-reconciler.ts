import { defineNitroPlugin } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { registerSecretSource } from '../utils/core/redact'
import { dnsCredentialSecrets } from '../utils/hosts/dns-providers'
import { manualCertKeySecrets } from '../utils/hosts/manual-certs'
import { channelSecrets } from '../utils/ops/notify/channels'
import { vapidSecrets } from '../utils/ops/notify/push'
import { startReconcileLoop, stopReconcileLoop } from '../utils/proxy/loop'

export default defineNitroPlugin((nitroApp) => {
  // The stored secrets the proxy's and the engine's answers are redacted against
  // before they reach a response, a log line or an audit row.
  registerSecretSource(dnsCredentialSecrets)
  registerSecretSource(manualCertKeySecrets)
  registerSecretSource(channelSecrets)
  registerSecretSource(vapidSecrets)
  whenBootReady().then(startReconcileLoop, () => {})
  nitroApp.hooks.hook('close', stopReconcileLoop)
})
