// Every background job's name, written once. A task's name is its file's path under
// server/tasks (nitro names it so: logs/prune.ts is 'logs:prune'); a loop's name is the one it
// records its runs under. The plugins that declare and start them, the route that starts the
// country expansion and nitro.config.ts's schedule use these, and declareBackgroundJob and
// startLoop take only these names: a misspelt name is a type error, not a job that never
// reports. tests/unit/core-job-names.test.ts checks that each task name has its file.
// No imports: nitro.config.ts reads this file.

export const TASKS = {
  authSweep: 'auth:sweep',
  backupsTick: 'backups:tick',
  certsCheckExpiry: 'certs:check-expiry',
  countriesExpand: 'countries:expand',
  geoipRefresh: 'geoip:refresh',
  logsPrune: 'logs:prune',
  logsVacuum: 'logs:vacuum',
  /** Not a nitro task: the reconcile loop's first push, recorded as a task run. */
  proxyBootPush: 'proxy:boot-push',
} as const

export const LOOPS = {
  countriesReconcile: 'countries:reconcile',
  logsIngest: 'logs:ingest',
  proxyReconcile: 'proxy:reconcile',
  securityDecisionMirror: 'security:decision-mirror',
  securityDrift: 'security:drift',
  securityEngineProbe: 'security:engine-probe',
} as const

export type TaskName = (typeof TASKS)[keyof typeof TASKS]
export type LoopName = (typeof LOOPS)[keyof typeof LOOPS]
export type BackgroundJobName = TaskName | LoopName
