import { computed, reactive } from 'vue'
import { abortPendingRequests, api, ApiError } from './api'

export interface SessionUser {
  id: number
  email: string
  name: string
  role: 'admin' | 'viewer'
  provider: string
  totp_enabled: boolean
}

export const session = reactive<{ user: SessionUser | null; loaded: boolean }>({ user: null, loaded: false })
export const isAdmin = computed(() => session.user?.role === 'admin')

// The server says in the page whether the cookie held a session when the page
// was served (server/ui-fallback.ts). Used once, for the first check: "none"
// skips a request that could only answer 401.
let _pageHint = document.querySelector('meta[name="panel-session"]')?.getAttribute('content') ?? null

export async function loadSession(): Promise<SessionUser | null> {
  const hint = _pageHint
  _pageHint = null
  if (hint === 'none') {
    session.user = null
    session.loaded = true
    return null
  }
  try {
    session.user = (await api<{ user: SessionUser }>('/api/auth/session')).user
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) throw e
    session.user = null
  }
  session.loaded = true
  return session.user
}

export async function logout() {
  abortPendingRequests()
  await api('/api/auth/logout', { method: 'POST' }).catch(() => {})
  session.user = null
}
