import { defineEventHandler } from 'h3'
import { readGeoStatus } from '~/server/utils/geo/refresh'

export default defineEventHandler(() => readGeoStatus())
