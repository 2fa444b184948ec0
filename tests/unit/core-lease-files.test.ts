import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { INSTANCE_ID, acquireLease, releaseLease } from '../../server/utils/core/lease'
import { writeFileAtomically } from '../../server/utils/core/files'
import { useMigratedDatabase } from '../support/migrated-db'

const dirOf = useMigratedDatabase('core-lease-')

describe('one lease helper for the process-held and the named-holder leases (real libSQL file)', () => {
  it('a second holder is refused while the lease lives, and cannot release it', async () => {
    expect(await acquireLease('t:one', 60_000, 'ingester@a')).toBe(true)
    expect(await acquireLease('t:one', 60_000, 'ingester@a')).toBe(true) // a renewal
    expect(await acquireLease('t:one', 60_000)).toBe(false) // this process (INSTANCE_ID) is another holder
    await releaseLease('t:one')
    expect(await acquireLease('t:one', 60_000, 'ingester@b')).toBe(false)
    await releaseLease('t:one', 'ingester@a')
    expect(await acquireLease('t:one', 60_000)).toBe(true)
  })

  it('an expired lease goes to whoever asks next', async () => {
    expect(await acquireLease('t:two', -1, 'old-holder')).toBe(true) // already expired
    expect(await acquireLease('t:two', 60_000, INSTANCE_ID)).toBe(true)
    expect(await acquireLease('t:two', 60_000, 'old-holder')).toBe(false)
  })
})

describe('writeFileAtomically', () => {
  it('creates the folder, writes the content with the exact mode, and leaves no temporary file', () => {
    const path = join(dirOf(), 'nested', 'key.pem')
    writeFileAtomically(path, 'first', 0o600)
    writeFileAtomically(path, new TextEncoder().encode('second'), 0o600)
    expect(readFileSync(path, 'utf8')).toBe('second')
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(readdirSync(join(dirOf(), 'nested'))).toEqual(['key.pem'])
  })
})
