import type { PanelHandle, PanelResponse } from './panel'

// The `api(path, method, body)` helper that test files used to write for themselves: requests
// to the panel as one session. The panel and the cookie are read at each call, so the helper
// can be made before beforeAll has started the panel and logged in.

export type SessionApi = <T = any>(path: string, method?: string, body?: unknown) => Promise<PanelResponse<T>>

export function sessionApi(session: () => { panel: Pick<PanelHandle, 'request'>; cookie: string | undefined }): SessionApi {
  return (path, method = 'GET', body) => {
    const { panel, cookie } = session()
    return panel.request(path, { method, cookie, body })
  }
}
