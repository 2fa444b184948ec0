import { defineEventHandler, getRouterParam } from 'h3'
import { getDnsProvider } from '~/server/utils/hosts/dns-providers'

export default defineEventHandler((event) => getDnsProvider(getRouterParam(event, 'name', { decode: true }) ?? ''))
