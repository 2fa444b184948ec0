import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'

// Real runtime figures for /api/system/health: garbage collections observed
// through perf_hooks and the event loop's delay histogram.

let _gcCount = 0
let _loop: ReturnType<typeof monitorEventLoopDelay> | undefined
let _started = false

export function startRuntimeMonitors(): void {
  if (_started) return
  _started = true
  const gc = new PerformanceObserver((list) => {
    _gcCount += list.getEntries().length
  })
  gc.observe({ entryTypes: ['gc'] })
  _loop = monitorEventLoopDelay({ resolution: 20 })
  _loop.enable()
}

export function readRuntimeMetrics() {
  const mem = process.memoryUsage()
  const lagMs = _loop ? Math.max(0, _loop.mean / 1e6 - 20) : 0
  return {
    memory: { alloc_bytes: mem.heapUsed, sys_bytes: mem.rss, gc_count: _gcCount },
    event_loop: {
      lag_ms: Number(lagMs.toFixed(3)),
      p99_lag_ms: _loop ? Number(Math.max(0, _loop.percentile(99) / 1e6 - 20).toFixed(3)) : 0,
      active_handles: process.getActiveResourcesInfo().length,
    },
  }
}
