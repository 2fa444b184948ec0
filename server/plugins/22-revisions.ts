import { defineNitroPlugin } from 'nitropack/runtime'
import { registerBeforeCommit } from '../utils/core/db'
import { onConfigPushed } from '../utils/proxy/sync/reconcile'
import { recordRevision } from '../utils/proxy/revisions/revisions'
import { rollBackDryRun } from '../utils/proxy/revisions/dry-run'

// Issue 17: every push that changes the proxy's configuration becomes a
// revision; a dry run (?dry_run=1) is described and rolled back before commit.
export default defineNitroPlugin(() => {
  onConfigPushed(recordRevision)
  registerBeforeCommit(rollBackDryRun)
})
