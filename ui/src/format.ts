export function fmtDate(v: string | number | null | undefined): string {
  if (v === null || v === undefined || v === '') return '—'
  const d = new Date(v)
  return Number.isNaN(d.getTime()) ? String(v) : `${d.toISOString().replace('T', ' ').slice(0, 19)} UTC`
}
export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—'
  const units = ['B', 'KiB', 'MiB', 'GiB']
  let i = 0
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024
    i++
  }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`
}
export function daysUntil(v: string | null | undefined): number | null {
  if (!v) return null
  return Math.floor((Date.parse(v) - Date.now()) / 86_400_000)
}
const regionNames = typeof Intl !== 'undefined' && 'DisplayNames' in Intl ? new Intl.DisplayNames(['en'], { type: 'region' }) : null
export function countryName(cc: string | null | undefined): string {
  if (!cc) return '—'
  if (cc === 'LAN') return 'LAN'
  try {
    return regionNames?.of(cc.toUpperCase()) ?? cc
  } catch {
    return cc
  }
}
