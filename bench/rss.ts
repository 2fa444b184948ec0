import { readFileSync } from 'node:fs'

// Resident memory of a process, read from /proc (Linux): what the panel holds in RAM.

/** VmRSS of `pid` in MB. */
export function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  if (kb === undefined) throw new Error(`no VmRSS for process ${pid}`)
  return Math.round(Number(kb) / 1024)
}

/** Runs `work` while sampling the RSS of `pid` every 20 ms; returns its result and the highest RSS seen (MB). */
export async function peakRssDuring<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; peakMb: number }> {
  let peakMb = rssMb(pid)
  const timer = setInterval(() => {
    try {
      peakMb = Math.max(peakMb, rssMb(pid))
    } catch {
      /* the process ended: the work reports it */
    }
  }, 20)
  try {
    const result = await work()
    peakMb = Math.max(peakMb, rssMb(pid))
    return { result, peakMb }
  } finally {
    clearInterval(timer)
  }
}
