import type { H3Event } from 'h3'
import { assertUploadFromPanelClient } from '../auth/access'
import { readBoundedMultipart } from '../core/body'
import { badRequest } from '../core/errors'
import { decodeUtf8 } from '../core/validate'

export const UPLOAD_PART_LIMIT_BYTES = 256 * 1024
const _PARTS = ['cert_pem', 'key_pem', 'chain_pem'] as const

/** The multipart certificate upload: known parts only, 256 KiB each, UTF-8 text (the whole body within the JSON limit, 1 MiB). */
export async function readCertificateUpload(event: H3Event): Promise<{ certPem: string; keyPem: string; chainPem: string | null }> {
  assertUploadFromPanelClient(event)
  const parts = await readBoundedMultipart(event)
  if (!parts?.length) throw badRequest('send multipart/form-data with the parts cert_pem, key_pem and optionally chain_pem')
  const found: Partial<Record<(typeof _PARTS)[number], string>> = {}
  for (const part of parts) {
    const name = part.name as (typeof _PARTS)[number]
    if (!_PARTS.includes(name)) throw badRequest(`unknown part "${part.name}"; send cert_pem, key_pem and optionally chain_pem`)
    if (part.data.length > UPLOAD_PART_LIMIT_BYTES) throw badRequest(`${name}: larger than ${UPLOAD_PART_LIMIT_BYTES / 1024} KiB`)
    found[name] = decodeUtf8(part.data, name)
  }
  if (!found.cert_pem) throw badRequest('cert_pem: is required')
  if (!found.key_pem) throw badRequest('key_pem: is required')
  return { certPem: found.cert_pem, keyPem: found.key_pem, chainPem: found.chain_pem ?? null }
}
