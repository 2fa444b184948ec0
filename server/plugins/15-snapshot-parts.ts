import { defineNitroPlugin } from 'nitropack/runtime'
import { registerSnapshotPart } from '../utils/proxy/snapshot'
import { addDnsProvidersToSnapshot } from '../utils/hosts/dns-providers'
import { addManualCertsToSnapshot } from '../utils/hosts/manual-certs'

// What the proxy configuration needs beyond hosts, groups and rules.
export default defineNitroPlugin(() => {
  registerSnapshotPart(addDnsProvidersToSnapshot)
  registerSnapshotPart(addManualCertsToSnapshot)
})
