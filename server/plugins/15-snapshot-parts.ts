import { defineNitroPlugin } from 'nitropack/runtime'
import { registerSnapshotPart } from '../utils/proxy/snapshot'
import { addDnsProvidersToSnapshot, dnsCredentialSecrets } from '../utils/hosts/dns-providers'
import { registerSecretSource } from '../utils/core/redact'
import { accessListHashSecrets, addAccessListsToSnapshot } from '../utils/hosts/access-lists'
import { addManualCertsToSnapshot, manualCertKeySecrets } from '../utils/hosts/manual-certs'
import { channelSecrets } from '../utils/ops/notify/channels'
import { vapidSecrets } from '../utils/ops/notify/push'

// What the proxy configuration needs beyond hosts, groups and rules, and the
// stored secrets proxy and engine text is redacted against.
export default defineNitroPlugin(() => {
  registerSnapshotPart(addDnsProvidersToSnapshot)
  registerSnapshotPart(addManualCertsToSnapshot)
  registerSnapshotPart(addAccessListsToSnapshot)
  registerSecretSource(dnsCredentialSecrets)
  registerSecretSource(manualCertKeySecrets)
  registerSecretSource(channelSecrets)
  registerSecretSource(vapidSecrets)
  registerSecretSource(accessListHashSecrets)
})
