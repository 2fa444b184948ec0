import { defineRecordedTask } from '../../utils/core/recorded-task'
import { whenBootReady } from '../../utils/core/boot'
import { checkCertificateExpiry } from '../../utils/ops/alerts'

// Recorded: /api/system/health shows this task's last run and what it returned.
export default defineRecordedTask({
  meta: { description: 'Emits cert_expiring_soon / manual_cert_expiring_soon for certificates within 21 days of expiry.' },
  async run() {
    await whenBootReady()
    return { expiring: await checkCertificateExpiry() }
  },
})
