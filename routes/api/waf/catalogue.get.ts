import { defineEventHandler } from 'h3'
import { presentWafCatalogue } from '~/server/utils/hosts/present'

export default defineEventHandler(() => presentWafCatalogue())
