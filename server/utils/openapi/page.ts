import type { OpenApiDocument } from './document'

// A small renderer of our own for GET /api/docs: the document as one HTML page,
// grouped by area, with parameters, bodies and responses. No script and no
// external asset, so the page works without network access.

const _esc = (s: unknown) =>
  String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)
const _json = (v: unknown) => `<pre>${_esc(JSON.stringify(v, null, 2))}</pre>`

/** Inline markdown of the descriptions: `code` only. */
const _text = (s: unknown) =>
  _esc(s)
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(/\n\n/g, '<br>')

/** A one-line type: `string`, `integer ≥ 1`, `"a" | "b"`, `array of object`, `string | null`. */
function _typeOf(schema: any): string {
  if (!schema || typeof schema !== 'object') return 'any'
  if (schema.$ref) return String(schema.$ref).split('/').at(-1)!
  if (schema.enum) return schema.enum.map((v: unknown) => JSON.stringify(v)).join(' | ')
  if (schema.const !== undefined) return JSON.stringify(schema.const)
  for (const k of ['anyOf', 'oneOf']) if (Array.isArray(schema[k])) return schema[k].map(_typeOf).join(' | ')
  let t = Array.isArray(schema.type) ? schema.type.join(' | ') : (schema.type ?? 'any')
  if (t === 'array') t = `array of ${_typeOf(schema.items)}`
  if (schema.format) t += ` (${schema.format})`
  if (schema.minimum !== undefined) t += ` ≥ ${schema.minimum}`
  if (schema.maximum !== undefined) t += ` ≤ ${schema.maximum}`
  if (schema.maxLength !== undefined) t += `, ≤ ${schema.maxLength} chars`
  return t
}

/** The top-level fields of an object (or of an array's items) as a table; nested shapes stay in the raw schema below. */
function _fields(schema: any): string {
  const target = schema?.type === 'array' ? schema.items : schema
  const props = target?.properties as Record<string, any> | undefined
  if (!props || !Object.keys(props).length) return ''
  const required = new Set<string>(target.required ?? [])
  const described = Object.values(props).some((p) => p?.description)
  return `${schema.type === 'array' ? '<p>an array of:</p>' : ''}<table class="fields"><tr><th>field</th><th>type</th><th></th>${described ? '<th>description</th>' : ''}</tr>${Object.entries(
    props,
  )
    .map(
      ([name, p]) =>
        `<tr><td><code>${_esc(name)}</code></td><td><code>${_esc(_typeOf(p))}</code></td><td>${required.has(name) ? 'required' : p.default !== undefined ? `default <code>${_esc(JSON.stringify(p.default))}</code>` : 'optional'}</td>${described ? `<td>${_text(p.description)}</td>` : ''}</tr>`,
    )
    .join('')}</table>`
}

interface Op {
  tags: string[]
  summary: string
  description: string
  operationId: string
  security: unknown[]
  parameters?: any[]
  requestBody?: any
  responses: Record<string, any>
}

function _operation(method: string, path: string, op: Op): string {
  const params = op.parameters?.length
    ? `<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>required</th><th>schema</th><th>description</th></tr>${op.parameters
        .map(
          (p) =>
            `<tr><td><code>${_esc(p.name)}</code></td><td>${_esc(p.in)}</td><td>${p.required ? 'yes' : 'no'}</td><td><code>${_esc(JSON.stringify(p.schema))}</code></td><td>${_text(p.description)}</td></tr>`,
        )
        .join('')}</table>`
    : ''
  const body = op.requestBody
    ? `<h4>Request body</h4>${Object.entries(op.requestBody.content as Record<string, { schema: unknown }>)
        .map(
          ([type, c]) =>
            `<p><code>${_esc(type)}</code></p>${_fields(c.schema)}<details><summary>JSON schema</summary>${_json(c.schema)}</details>`,
        )
        .join('')}`
    : ''
  const responses = `<h4>Responses</h4><table><tr><th>status</th><th>description</th><th>body</th></tr>${Object.entries(op.responses)
    .map(([status, r]) => {
      const content = r.content
        ? Object.entries(r.content as Record<string, { schema: any }>)
            .map(
              ([type, c]) =>
                `<code>${_esc(type)}</code>${c.schema?.$ref ? ` <code>${_esc(_typeOf(c.schema))}</code>` : `${_fields(c.schema)}<details><summary>JSON schema</summary>${_json(c.schema)}</details>`}`,
            )
            .join('')
        : ''
      const headers = r.headers
        ? `<br>headers: ${Object.entries(r.headers as Record<string, { description: string }>)
            .map(([h, d]) => `<code>${_esc(h)}</code> ${_esc(d.description)}`)
            .join('; ')}`
        : ''
      return `<tr><td>${_esc(status)}</td><td>${_text(r.description)}${headers}</td><td class="body">${content}</td></tr>`
    })
    .join('')}</table>`
  return (
    `<section class="op" id="${_esc(op.operationId)}"><h3><span class="m ${_esc(method)}">${_esc(method.toUpperCase())}</span> <code>${_esc(path)}</code> ${_esc(op.summary)}</h3>` +
    `<p>${_text(op.description)}</p>${params}${body}${responses}</section>`
  )
}

export function renderReferencePage(doc: OpenApiDocument): string {
  const byTag = new Map<string, string[]>()
  const toc = new Map<string, string[]>()
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, raw] of Object.entries(item)) {
      const op = raw as Op
      const tag = op.tags[0] ?? 'other'
      if (!byTag.has(tag)) {
        byTag.set(tag, [])
        toc.set(tag, [])
      }
      byTag.get(tag)!.push(_operation(method, path, op))
      toc
        .get(tag)!
        .push(
          `<li><a href="#${_esc(op.operationId)}"><span class="m ${_esc(method)}">${_esc(method.toUpperCase())}</span> ${_esc(path)}</a></li>`,
        )
    }
  }
  const tags = doc.tags.filter((t) => byTag.has(t.name))
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${_esc(doc.info.title)} ${_esc(doc.info.version)}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:0;display:flex;color:#1d232a}
nav{width:300px;flex:none;height:100vh;overflow:auto;position:sticky;top:0;border-right:1px solid #ddd;padding:12px;box-sizing:border-box;font-size:12px}
nav ul{list-style:none;padding-left:0}nav a{text-decoration:none;color:inherit}main{padding:16px 28px;max-width:1100px;min-width:0}
.op{border-top:1px solid #e3e3e3;padding:8px 0}.m{display:inline-block;min-width:52px;text-align:center;border-radius:3px;color:#fff;font-size:11px;padding:1px 4px;font-weight:600}
.get{background:#2b7bb9}.post{background:#2f8a4c}.put{background:#b8860b}.patch{background:#8a5fb5}.delete{background:#b73a3a}
table{border-collapse:collapse;width:100%;margin:4px 0}td,th{border:1px solid #ddd;padding:4px 6px;vertical-align:top;text-align:left}td.body{width:55%}
table.fields td,table.fields th{font-size:12px;padding:2px 6px}
pre{background:#f6f8fa;padding:8px;overflow:auto;max-height:420px;font-size:12px}code{font-size:12px}
</style></head><body>
<nav><strong>${_esc(doc.info.title)}</strong> ${_esc(doc.info.version)}<p><a href="/api/openapi.json">openapi.json</a></p>
${tags.map((t) => `<h4><a href="#tag-${_esc(t.name)}">${_esc(t.name)}</a></h4><ul>${toc.get(t.name)!.join('')}</ul>`).join('')}</nav>
<main><h1>${_esc(doc.info.title)}</h1><p>${_text(doc.info.description)}</p>
<p>Error shape: ${_json(doc.components.schemas.Error)}</p>
${tags.map((t) => `<h2 id="tag-${_esc(t.name)}">${_esc(t.name)}: ${_esc(t.description)}</h2>${byTag.get(t.name)!.join('')}`).join('')}
</main></body></html>`
}
