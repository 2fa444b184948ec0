// On a phone every table is shown as a stack of cards (style.css, under 768 px):
// each cell then needs its column's name beside it. Rather than every screen
// repeating its headers in each cell, one observer copies the header text of
// each column into the cells' data-label, for every table the app renders now
// or later (new screens included).
function labelTable(table: HTMLTableElement) {
  const heads = Array.from(table.tHead?.rows[0]?.cells ?? []).map((c) => (c.dataset.label ?? c.textContent ?? '').trim())
  for (const body of Array.from(table.tBodies)) {
    for (const row of Array.from(body.rows)) {
      Array.from(row.cells).forEach((cell, i) => {
        const label = heads[i] ?? ''
        if (cell.dataset.label !== label) cell.dataset.label = label
      })
    }
  }
}

export function startCardLabels(root: HTMLElement) {
  const pending = new Set<HTMLTableElement>()
  let scheduled = false
  const flush = () => {
    scheduled = false
    for (const t of pending) if (t.isConnected) labelTable(t)
    pending.clear()
  }
  new MutationObserver((records) => {
    for (const r of records) {
      const el = r.target instanceof HTMLElement ? r.target : r.target.parentElement
      const table = el?.closest('table')
      if (table) pending.add(table)
      for (const n of Array.from(r.addedNodes)) if (n instanceof HTMLElement) n.querySelectorAll('table').forEach((t) => pending.add(t))
    }
    if (pending.size && !scheduled) {
      scheduled = true
      queueMicrotask(flush)
    }
  }).observe(root, { childList: true, subtree: true, characterData: true })
}
