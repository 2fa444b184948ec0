import { defineEventHandler, setResponseHeader } from 'h3'

// Liveness only: answers while the HTTP layer is alive, probes nothing.
export default defineEventHandler((event) => {
  setResponseHeader(event, 'content-type', 'text/plain; charset=utf-8')
  return 'ok'
})
