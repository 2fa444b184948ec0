import { defineEventHandler } from 'h3'
import { listCountryBans } from '~/server/utils/security/countries'

export default defineEventHandler(() => listCountryBans())
