// The host form's part for the escape hatch (docs/hosts.md, "Custom handlers"): the
// handlers are edited as JSON text; the API checks them and the proxy validates them.

export interface CustomHandlersModel {
  text: string
  at: string
}

export function customHandlersModel(h: any): CustomHandlersModel {
  const list = h?.custom_handlers ?? []
  return { text: list.length ? JSON.stringify(list, null, 2) : '', at: h?.custom_handlers_at ?? 'before_proxy' }
}

/** The text as JSON, or the parser's complaint (shown under the field; the text is then sent as is and refused). */
export function parseCustomHandlers(text: string): { value: unknown; error: string | null } {
  if (!text.trim()) return { value: [], error: null }
  try {
    return { value: JSON.parse(text), error: null }
  } catch (e) {
    return { value: text, error: (e as Error).message }
  }
}

export function customHandlersBody(m: CustomHandlersModel) {
  return { custom_handlers: parseCustomHandlers(m.text).value, custom_handlers_at: m.at }
}
