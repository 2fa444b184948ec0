import { defineEventHandler, getRouterParam, setResponseHeaders } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { readManualCertPem } from '~/server/utils/hosts/manual-certs'

export default defineEventHandler(async (event) => {
  const { domain, pem } = await readManualCertPem(parseIdParam(getRouterParam(event, 'host_id'), 'host id'))
  setResponseHeaders(event, {
    'content-type': 'application/x-pem-file',
    'content-disposition': `attachment; filename="${domain.replace(/[^a-z0-9.-]/g, '_')}.pem"`,
  })
  return pem
})
