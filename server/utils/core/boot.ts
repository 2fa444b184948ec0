// Nitro calls plugins without awaiting them: async boot work publishes this
// promise, and the first middleware awaits it before any request is served.

let _resolve!: () => void
let _reject!: (err: Error) => void
const _ready = new Promise<void>((res, rej) => {
  _resolve = res
  _reject = rej
})
_ready.catch(() => {})
let _failure: Error | undefined
let _isReady = false

export const bootStartedAtMs = Date.now()

export function markBootReady(): void {
  _isReady = true
  _resolve()
}
/** Whether boot has finished (for a path that must not wait on the promise). */
export function isBootReady(): boolean {
  return _isReady
}
export function markBootFailed(err: Error): void {
  _failure = err
  _reject(err)
}
export function whenBootReady(): Promise<void> {
  return _ready
}
export function bootFailure(): Error | undefined {
  return _failure
}
