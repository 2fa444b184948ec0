import { onBeforeUnmount, onMounted } from 'vue'
import { onBeforeRouteLeave } from 'vue-router'

export const LEAVE_QUESTION = 'This form has unsaved changes. Leave and lose them?'

/**
 * Asks before the operator leaves a form with edits not saved yet: another screen
 * of the app (a confirm) or the page itself (reload, close, typed address: the
 * browser's own question, whose text browsers do not let a page choose).
 */
export function useUnsavedGuard(isDirty: () => boolean) {
  onBeforeRouteLeave(() => !isDirty() || confirm(LEAVE_QUESTION))
  const onUnload = (e: BeforeUnloadEvent) => {
    if (isDirty()) e.preventDefault()
  }
  onMounted(() => window.addEventListener('beforeunload', onUnload))
  onBeforeUnmount(() => window.removeEventListener('beforeunload', onUnload))
}
