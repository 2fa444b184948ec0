// Reading a large JSON object of arrays ({"new": [...], "deleted": [...]}) as it
// arrives, one array element at a time, so that neither the whole text nor the
// whole parsed answer is ever held: each element is parsed and handed over
// alone. The counterpart of json-array-stream.ts, which writes such arrays.
// It only splits; JSON.parse judges each element, and an answer that is not an
// object of arrays (or is cut) is an error at the end.

/** Receives the elements of the top-level object's array members, in order: (member name, parsed element). */
export type ElementSink = (member: string, element: unknown) => void

const _QUOTE = 34,
  _BACKSLASH = 92,
  _OPEN_OBJECT = 123,
  _CLOSE_OBJECT = 125,
  _OPEN_ARRAY = 91,
  _CLOSE_ARRAY = 93

export class TopLevelArrayReader {
  /** Text not consumed yet: from the start of the element being read, or empty between elements. */
  private _pending = ''
  private _depth = 0
  private _inString = false
  private _escaped = false
  /** Where the current string at depth 1 (a member name) starts in `_pending`, or -1. */
  private _keyStart = -1
  private _lastKey = ''
  private _arrayMember: string | null = null
  /** Where the element at depth 2 starts in `_pending`, or -1 (between elements). */
  private _elementStart = -1
  private _sawObject = false
  /** What stands outside the object at the top (`null` is the engine's empty answer); a few characters at most. */
  private _topLevelText = ''

  constructor(private readonly _sink: ElementSink) {}

  push(chunk: string): void {
    const text = this._pending + chunk
    // Positions in `text` where scanning resumes: everything before `_pending.length` was scanned already.
    let i = this._pending.length
    for (; i < text.length; i++) {
      const c = text.charCodeAt(i)
      if (this._inString) {
        if (this._escaped) this._escaped = false
        else if (c === _BACKSLASH) this._escaped = true
        else if (c === _QUOTE) {
          this._inString = false
          if (this._keyStart >= 0) {
            this._lastKey = JSON.parse(text.slice(this._keyStart, i + 1)) as string
            this._keyStart = -1
          }
        }
        continue
      }
      if (c === _QUOTE) {
        this._inString = true
        if (this._depth === 1) this._keyStart = i
        else if (this._depth === 0) this._topLevelText += '"'
      } else if (c === _OPEN_OBJECT || c === _OPEN_ARRAY) {
        if (this._depth === 0) {
          if (c !== _OPEN_OBJECT) throw new Error('expected a JSON object of arrays, got an array')
          this._sawObject = true
        } else if (this._depth === 1) this._arrayMember = c === _OPEN_ARRAY ? this._lastKey : null
        else if (this._depth === 2 && this._arrayMember !== null) this._elementStart = i
        this._depth++
      } else if (c === _CLOSE_OBJECT || c === _CLOSE_ARRAY) {
        this._depth--
        if (this._depth < 0) throw new Error('unbalanced JSON: a closing bracket without its opening one')
        if (this._depth === 2 && this._elementStart >= 0) {
          this._sink(this._arrayMember!, JSON.parse(text.slice(this._elementStart, i + 1)))
          this._elementStart = -1
        } else if (this._depth === 1) this._arrayMember = null
      } else if (this._depth === 0 && c > 32) {
        if (this._topLevelText.length < 8) this._topLevelText += text[i]
      } else if (this._depth === 2 && this._arrayMember !== null && c > 32 && c !== 44 && this._elementStart < 0) {
        // A scalar element (a number, true, null): not what this reader is for.
        throw new Error(`member "${this._arrayMember}" holds a non-object element`)
      }
    }
    // Keep only what an unfinished element or member name still needs.
    const keep = this._elementStart >= 0 ? this._elementStart : this._keyStart >= 0 ? this._keyStart : text.length
    this._pending = text.slice(keep)
    if (this._elementStart >= 0) this._elementStart -= keep
    if (this._keyStart >= 0) this._keyStart -= keep
  }

  /** Throws when the text ended inside the object (a cut answer), or held no object. */
  end(): void {
    if (this._depth !== 0 || this._inString) throw new Error('the JSON answer ended before its end (cut off)')
    if (this._topLevelText !== '' && !(this._topLevelText === 'null' && !this._sawObject))
      throw new Error('expected a JSON object of arrays')
  }
}

/** Reads a response body through a TopLevelArrayReader; an empty body or `null` gives no element. */
export async function readTopLevelArrays(body: ReadableStream<Uint8Array> | null, sink: ElementSink): Promise<void> {
  const reader = new TopLevelArrayReader(sink)
  if (body) {
    const decoder = new TextDecoder('utf-8', { fatal: true })
    for await (const bytes of body as unknown as AsyncIterable<Uint8Array>) reader.push(decoder.decode(bytes, { stream: true }))
    reader.push(decoder.decode())
  }
  reader.end()
}
