import { readFileSync } from 'node:fs'

// Resident memory and CPU time of a process, read from /proc (Linux).

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

/** CPU time `pid` has used so far, in ms (user + system, from /proc/<pid>/stat at 100 ticks a second). */
export function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** cpuMsOf a process and its direct children (nginx's workers); a child that exits meanwhile counts 0. */
export function cpuMsOfTree(pid: number): number {
  let children: number[] = []
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    children = []
  }
  const tolerant = (p: number) => {
    try {
      return cpuMsOf(p)
    } catch {
      return 0
    }
  }
  return cpuMsOf(pid) + children.reduce((sum, c) => sum + tolerant(c), 0)
}
