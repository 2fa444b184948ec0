import { defineNitroPlugin } from 'nitropack/runtime'
import { onConfigPushed } from '../utils/proxy/sync/reconcile'
import { recordRevision } from '../utils/proxy/revisions/revisions'

// Issue 17: every push that changes the proxy's configuration becomes a
// revision. (A dry run is rolled back by the transaction itself: core/db.ts.)
export default defineNitroPlugin(() => {
  onConfigPushed(recordRevision)
})
