import { defineNitroPlugin } from 'nitropack/runtime'
import { registerBeforeCommit } from '../utils/core/db'
import { onConfigPushed } from '../utils/proxy/reconciler'
import { recordRevision } from '../utils/proxy/revisions'
import { rollBackDryRun } from '../utils/proxy/dry-run'

// Issue 17: every push that changes the proxy's configuration becomes a
// revision; a dry run (?dry_run=1) is described and rolled back before commit.
export default defineNitroPlugin(() => {
  onConfigPushed(recordRevision)
  registerBeforeCommit(rollBackDryRun)
})
