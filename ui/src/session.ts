import { computed, reactive } from 'vue'
import { api, ApiError } from './api'

export interface SessionUser { id: number; email: string; name: string; role: 'admin' | 'viewer'; provider: string; totp_enabled: boolean }

export const session = reactive<{ user: SessionUser | null; loaded: boolean }>({ user: null, loaded: false })
export const isAdmin = computed(() => session.user?.role === 'admin')

export async function loadSession(): Promise<SessionUser | null> {
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
  await api('/api/auth/logout', { method: 'POST' }).catch(() => {})
  session.user = null
}
