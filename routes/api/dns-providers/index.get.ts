import { defineEventHandler } from 'h3'
import { listDnsProviders } from '~/server/utils/hosts/dns-providers'

export default defineEventHandler(() => listDnsProviders())
