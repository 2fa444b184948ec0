import { defineNitroPlugin } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { declareBackgroundJob } from '../utils/core/runtime-state'
import { registerSecretSource } from '../utils/core/redact'
import { onSettingsCommit } from '../utils/core/settings'
import { registerSystemHealthSection } from '../utils/ops/health'
import { dnsCredentialSecrets } from '../utils/hosts/dns-providers'
import { manualCertKeySecrets } from '../utils/hosts/manual-certs'
import { accessListHashSecrets } from '../utils/hosts/access-lists'
import { nodeBouncerKeySecrets, nodeKeySecrets } from '../utils/proxy/nodes/node-records'
import { readNodesHealth } from '../utils/proxy/nodes/nodes'
import { readProxyHealth, reconcileOnSettingsChange, startReconcileLoop, stopReconcileLoop } from '../utils/proxy/sync/loop'

// The proxy subsystem: the reconcile loop (one push at boot, then checks), its
// health section, and the push when a setting the configuration holds changes.
export default defineNitroPlugin((nitroApp) => {
  // Stored secrets the proxy's text can quote (the DNS module prints a refused token): every
  // text from the proxy or the engine is redacted against them (core/redact.ts).
  registerSecretSource(dnsCredentialSecrets)
  registerSecretSource(manualCertKeySecrets)
  registerSecretSource(accessListHashSecrets)
  registerSecretSource(nodeKeySecrets)
  registerSecretSource(nodeBouncerKeySecrets)
  registerSystemHealthSection('proxy', readProxyHealth)
  registerSystemHealthSection('proxy_nodes', readNodesHealth)
  // Inside the settings transaction: a proxy rejection rolls the change back.
  onSettingsCommit(reconcileOnSettingsChange)
  declareBackgroundJob('proxy:boot-push', 'task')
  declareBackgroundJob('proxy:reconcile', 'loop')
  whenBootReady().then(startReconcileLoop, () => {})
  nitroApp.hooks.hook('close', stopReconcileLoop)
})
