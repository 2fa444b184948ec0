import { appendFileSync, mkdtempSync, renameSync, rmSync, truncateSync, unlinkSync, writeFileSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { headFor, MAX_LINE_BYTES, planRead, readLines, type Position, type ReadPlan } from '../../server/utils/logs/tailer'

// The tailer on real files: what it reads, and where it says it got to.
let dir: string
let file: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tailer-'))
  file = join(dir, 'access.log')
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** Reads everything the plan covers; returns the texts and the position to store. */
function drain(plan: ReadPlan, group = 1000): { texts: Array<string | null>; pos: Position; groups: number } {
  const texts: Array<string | null> = []
  let end = plan.from,
    groups = 0
  for (const g of readLines(plan, group)) {
    groups++
    for (const l of g) {
      texts.push(l.text)
      end = l.end
    }
  }
  return { texts, pos: { inode: plan.inode, offset: end, head: headFor(plan.head, end) }, groups }
}
/** Follows the file the way the ingester does: every plan until there is nothing left. */
function follow(pos: Position | null): { texts: Array<string | null>; pos: Position | null; reasons: string[] } {
  const texts: Array<string | null> = [],
    reasons: string[] = []
  for (let i = 0; i < 5; i++) {
    const plan = planRead(file, pos)
    if (!plan) break
    reasons.push(plan.reason)
    const r = drain(plan)
    texts.push(...r.texts)
    pos = r.texts.length ? r.pos : { inode: plan.inode, offset: plan.from, head: headFor(plan.head, plan.from) }
    if (!r.texts.length) break
  }
  return { texts, pos, reasons }
}

describe('planRead and readLines', () => {
  it('reads appended complete lines, and waits for a partial last line', () => {
    writeFileSync(file, 'one\ntwo\nthr')
    let r = follow(null)
    expect(r.texts).toEqual(['one', 'two'])
    expect(r.pos!.offset).toBe(8)
    expect(follow(r.pos).texts).toEqual([])
    appendFileSync(file, 'ee\r\nfour\n')
    r = follow(r.pos)
    expect(r).toMatchObject({ texts: ['three', 'four'], reasons: ['append'] })
    expect(planRead(file, r.pos)).toBeNull()
  })

  it('groups lines, each group with the offset just past its last line', () => {
    writeFileSync(file, Array.from({ length: 25 }, (_, i) => `line ${i}\n`).join(''))
    const plan = planRead(file, null)!
    const groups = [...readLines(plan, 10)]
    expect(groups.map((g) => g.length)).toEqual([10, 10, 5])
    expect(groups[0]!.at(-1)!.end).toBe(Buffer.byteLength(Array.from({ length: 10 }, (_, i) => `line ${i}\n`).join('')))
    expect(groups[2]!.at(-1)!.end).toBe(statSync(file).size)
  })

  it('after a rotation reads the rest of the rotated file, then the new one from the start', () => {
    writeFileSync(file, 'a1\na2\n')
    let r = follow(null)
    appendFileSync(file, 'a3\n') // written before the rotation, not read yet
    renameSync(file, join(dir, 'access-2026-11-22T10-00-00.000.log'))
    writeFileSync(file, 'b1\n')
    r = follow(r.pos)
    expect(r).toMatchObject({ texts: ['a3', 'b1'], reasons: ['rotated-rest', 'new-file'] })
    appendFileSync(file, 'b2\n')
    expect(follow(r.pos)).toMatchObject({ texts: ['b2'], reasons: ['append'] })
  })

  it('a rotated file already gone (compressed) is skipped; the new file is read from the start', () => {
    writeFileSync(file, 'a1\n')
    const r = follow(null)
    renameSync(file, join(dir, 'access.log.1'))
    unlinkSync(join(dir, 'access.log.1'))
    writeFileSync(file, 'b1\n')
    // The new file may even get the old inode back: its first bytes tell it apart.
    const next = follow(r.pos)
    expect(next.texts).toEqual(['b1'])
    expect(next.reasons).toHaveLength(1)
    expect(['new-file', 'truncated']).toContain(next.reasons[0])
  })

  it('notices a truncation, also when the file has grown past the old offset again', () => {
    writeFileSync(file, '{"ts":1,"uri":"/first"}\n')
    let r = follow(null)
    truncateSync(file, 0)
    r = follow(r.pos)
    expect(r).toMatchObject({ texts: [], reasons: ['truncated'] })
    appendFileSync(file, '{"ts":1,"uri":"/again"}\n')
    r = follow(r.pos)
    expect(r).toMatchObject({ texts: ['{"ts":1,"uri":"/again"}'], reasons: ['append'] })
    // Truncated and written again past the old offset between two reads: same inode, same first bytes, longer.
    truncateSync(file, 0)
    appendFileSync(file, '{"ts":1,"uri":"/second-and-longer"}\n{"ts":2}\n')
    expect(follow(r.pos)).toMatchObject({ texts: ['{"ts":1,"uri":"/second-and-longer"}', '{"ts":2}'], reasons: ['truncated'] })
  })

  it('cuts a line longer than 1 MiB and skips the rest of it, then carries on', () => {
    const long = 'x'.repeat(MAX_LINE_BYTES * 5 + 17)
    writeFileSync(file, `before\n${long}\nafter\n`)
    const r = follow(null)
    expect(r.texts.map((t) => (t === null ? null : t.length > 100 ? `long:${t.length}` : t))).toEqual([
      'before',
      `long:${MAX_LINE_BYTES}`,
      null,
      'after',
    ])
    expect(r.pos!.offset).toBe(statSync(file).size)
  })

  it('replaces invalid UTF-8 with U+FFFD', () => {
    writeFileSync(file, Buffer.concat([Buffer.from('ok '), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('\n')]))
    expect(follow(null).texts).toEqual(['ok \uFFFD(\uFFFD'])
  })

  it('a missing file is nothing to read', () => {
    expect(planRead(file, null)).toBeNull()
    expect(planRead(file, { inode: 1, offset: 10, head: '' })).toBeNull()
  })
})
