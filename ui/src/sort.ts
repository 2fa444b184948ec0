import { computed, reactive, type Ref } from 'vue'

export type SortState = { key: string; dir: 'asc' | 'desc' }
type Getter<T> = (row: T) => string | number | boolean | null | undefined

// Missing values (no certificate, no status) go last in both directions: the
// rows with something to compare stay together at the top.
function compare(a: unknown, b: unknown, sign: 1 | -1): number {
  const missingA = a === null || a === undefined || a === ''
  const missingB = b === null || b === undefined || b === ''
  if (missingA || missingB) return missingA === missingB ? 0 : missingA ? 1 : -1
  if (typeof a === 'number' && typeof b === 'number') return sign * (a - b)
  return sign * String(a).localeCompare(String(b), undefined, { numeric: true, sensitivity: 'base' })
}

/**
 * Column sorting of a list held in the browser: `columns` names what each sortable
 * column compares. Clicking a column sorts by it ascending, clicking it again
 * descending. Until a column is picked the list keeps the order the API gave.
 */
export function useSort<T>(rows: Ref<T[]> | (() => T[]), columns: Record<string, Getter<T>>) {
  const state = reactive<SortState>({ key: '', dir: 'asc' })
  const source = typeof rows === 'function' ? rows : () => rows.value
  const sorted = computed(() => {
    const list = source()
    const get = columns[state.key]
    if (!get) return list
    const sign = state.dir === 'asc' ? 1 : -1
    return [...list].sort((x, y) => compare(get(x), get(y), sign))
  })
  function toggle(key: string) {
    if (state.key === key) state.dir = state.dir === 'asc' ? 'desc' : 'asc'
    else {
      state.key = key
      state.dir = 'asc'
    }
  }
  return { state, sorted, toggle }
}
