import { defineTask } from 'nitropack/runtime'
import { whenBootReady } from '../../utils/core/boot'
import { checkCertificateExpiry } from '../../utils/ops/alerts'

export default defineTask({
  meta: { description: 'Emits cert_expiring_soon / manual_cert_expiring_soon for certificates within 21 days of expiry.' },
  async run() {
    await whenBootReady()
    return { result: { expiring: await checkCertificateExpiry() } }
  },
})
