import { ref, watch } from 'vue'

// Dark mode follows the system unless the operator picks light or dark; the choice
// stays in this browser (localStorage), not on the server: it is a property of the
// screen they sit at, not of the account.
export type ThemeChoice = 'system' | 'light' | 'dark'
const KEY = 'edge-panel-theme'
const systemDark = typeof matchMedia === 'function' ? matchMedia('(prefers-color-scheme: dark)') : null

function stored(): ThemeChoice {
  try {
    const v = localStorage.getItem(KEY)
    return v === 'light' || v === 'dark' ? v : 'system'
  } catch {
    return 'system'
  }
}

export const themeChoice = ref<ThemeChoice>(stored())

/** Sets html[data-theme] to the theme in force, which the style sheet's colours key on. */
function apply() {
  const dark = themeChoice.value === 'dark' || (themeChoice.value === 'system' && !!systemDark?.matches)
  document.documentElement.dataset.theme = dark ? 'dark' : 'light'
}

export function startTheme() {
  apply()
  systemDark?.addEventListener('change', apply)
  watch(themeChoice, (v) => {
    try {
      if (v === 'system') localStorage.removeItem(KEY)
      else localStorage.setItem(KEY, v)
    } catch {
      /* private mode: the choice lasts this page */
    }
    apply()
  })
}
