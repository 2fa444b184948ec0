import { defineEventHandler } from 'h3'
import { listDnsProviders } from '~/server/utils/hosts/dns-providers'
import { withLastDnsCheck } from '~/server/utils/proxy/dns-check'

export default defineEventHandler(async () => Promise.all((await listDnsProviders()).map(withLastDnsCheck)))
