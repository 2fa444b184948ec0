import { describe, expect, it } from 'vitest'
import { readTopLevelArrays, TopLevelArrayReader } from '../../server/utils/core/json-array-reader'

function readInPieces(text: string, cuts: number[]): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = []
  const reader = new TopLevelArrayReader((member, element) => out.push([member, element]))
  let from = 0
  for (const cut of [...cuts, text.length]) {
    reader.push(text.slice(from, cut))
    from = cut
  }
  reader.end()
  return out
}
const expected = (doc: Record<string, unknown>) =>
  Object.entries(doc).flatMap(([k, v]) => (Array.isArray(v) ? v.map((e) => [k, e] as [string, unknown]) : []))

describe('TopLevelArrayReader', () => {
  const doc = {
    deleted: [{ id: 1, value: '1.2.3.4', scenario: 'a "quoted" } ] { [ name\\' }],
    meta: 'a string value [not an array]',
    new: [
      { id: 2, value: '2001:db8::1', nested: { list: [1, 2, { deep: '}' }] } },
      { id: 3, value: 'é ünïcode \u2028', duration: '3h59m' },
      [1, 2],
    ],
    empty: [],
    none: null,
  }
  const text = JSON.stringify(doc, null, 1)

  it('gives every element of every array member, in order, cut at every position', () => {
    for (let cut = 0; cut <= text.length; cut++) expect(readInPieces(text, [cut]), `cut at ${cut}`).toEqual(expected(doc))
  })
  it('gives the same for three random cuts, many times', () => {
    let x = 7
    const rnd = () => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0
      return x % (text.length + 1)
    }
    for (let n = 0; n < 300; n++)
      expect(
        readInPieces(
          text,
          [rnd(), rnd(), rnd()].sort((a, b) => a - b),
        ),
      ).toEqual(expected(doc))
  })
  it("takes the engine's empty answers: null members, an empty body, null", () => {
    expect(readInPieces('{"new":null,"deleted":null}', [])).toEqual([])
    expect(readInPieces('', [])).toEqual([])
    expect(readInPieces('null', [])).toEqual([])
  })
  it('refuses a cut answer, a scalar element, an array at the top and a broken element', () => {
    expect(() => readInPieces('{"new":[{"id":1},{"id":', [])).toThrow(/ended before its end/)
    expect(() => readInPieces('{"new":[1,2]}', [])).toThrow(/non-object element/)
    expect(() => readInPieces('[{"id":1}]', [])).toThrow(/got an array/)
    expect(() => readInPieces('123', [])).toThrow(/expected a JSON object of arrays/)
    expect(() => readInPieces('"text"', [])).toThrow(/expected a JSON object of arrays/)
    expect(() => readInPieces('{"new":[]} x', [])).toThrow(/expected a JSON object of arrays/)
    expect(() => readInPieces('{"new":[{"id":1,}]}', [])).toThrow(SyntaxError)
  })
  it('reads a response body of bytes split inside a multi-byte character', async () => {
    const bytes = new TextEncoder().encode('{"new":[{"v":"é€😀"}]}')
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += 3) c.enqueue(bytes.slice(i, i + 3))
        c.close()
      },
    })
    const out: unknown[] = []
    await readTopLevelArrays(body, (_m, e) => out.push(e))
    expect(out).toEqual([{ v: 'é€😀' }])
  })
})
