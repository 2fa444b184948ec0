import { defineEventHandler, getRouterParam } from 'h3'
import { getDnsProvider } from '~/server/utils/hosts/dns-providers'
import { withLastDnsCheck } from '~/server/utils/proxy/dns-check'

export default defineEventHandler(async (event) =>
  withLastDnsCheck(await getDnsProvider(getRouterParam(event, 'name', { decode: true }) ?? '')),
)
