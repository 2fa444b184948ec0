import { defineEventHandler } from 'h3'
import { listManualCerts } from '~/server/utils/hosts/manual-certs'

export default defineEventHandler(() => listManualCerts())
