import { defineEventHandler, getRouterParam } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { getDnsProvider } from '~/server/utils/hosts/dns-providers'
import { dnsCheckBody, testDnsProvider } from '~/server/utils/proxy/dns-check'

export default defineEventHandler(async (event) => {
  const name = getRouterParam(event, 'name', { decode: true }) ?? ''
  await getDnsProvider(name) // 404 for a name outside the catalogue, before the body is judged
  return testDnsProvider(name, await readValidatedJson(event, dnsCheckBody), auditContextOf(event))
})
