import { z } from 'zod'
import { emailSchema, safeText } from '../core/validate'
import { MIN_PASSWORD_LENGTH } from './passwords'

export const passwordSchema = z.string()
  .min(MIN_PASSWORD_LENGTH, `must be at least ${MIN_PASSWORD_LENGTH} characters`)
  .max(256, 'must be at most 256 characters')

export const loginBody = z.strictObject({ email: emailSchema, password: z.string().max(256, 'must be at most 256 characters') })
export const setupBody = z.strictObject({ email: emailSchema, password: passwordSchema, name: safeText(100).optional() })
export const roleSchema = z.enum(['admin', 'viewer'], { message: 'must be "admin" or "viewer"' })
export const createUserBody = z.strictObject({ email: emailSchema, password: passwordSchema, name: safeText(100).optional(), role: roleSchema })
export const updateUserBody = z.strictObject({ email: emailSchema, name: safeText(100), role: roleSchema, password: passwordSchema.optional() })
