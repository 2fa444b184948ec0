import { defineEventHandler, getRouterParam, setResponseStatus } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { readCertificateUpload } from '~/server/utils/hosts/upload'
import { uploadManualCert } from '~/server/utils/hosts/manual-certs'

export default defineEventHandler(async (event) => {
  const hostId = parseIdParam(getRouterParam(event, 'host_id'), 'host id')
  const meta = await uploadManualCert(hostId, await readCertificateUpload(event), auditContextOf(event))
  setResponseStatus(event, 201)
  return meta
})
