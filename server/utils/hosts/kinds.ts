import { badRequest } from '../core/errors'
import type { HostFields } from './schemas'

// The checks of a host kind that need more than one field, made on the resolved
// fields (a PUT that leaves `kind` out keeps the stored one), so the message
// names the field the operator has to fill in.

export function assertHostKindFields(fields: HostFields): void {
  switch (fields.kind) {
    case 'proxy':
      if (fields.target_group_id === null)
        throw badRequest('target_group_id: a proxy host needs a target group; choose one, or pick another kind')
      break
    case 'redirect': {
      if (!fields.redirect_to)
        throw badRequest('redirect_to: a redirect host needs a target, an http(s) URL such as https://www.example.com/ or a host name')
      // The path and query are appended to the target: a query or fragment of its own would end up in the middle.
      if (fields.redirect_keep_path && /^https?:\/\//i.test(fields.redirect_to) && /[?#]/.test(fields.redirect_to))
        throw badRequest(
          "redirect_to: must not have a query (?) or fragment (#) while redirect_keep_path is true (the request's path and query are appended)",
        )
      const names = [fields.domain, ...fields.aliases]
      if (names.includes(_targetHost(fields.redirect_to)))
        throw badRequest(`redirect_to: points at this host's own name (${_targetHost(fields.redirect_to)}), which would redirect forever`)
      break
    }
    case 'maintenance':
      if (fields.maintenance_bypass.length && fields.target_group_id === null)
        throw badRequest('target_group_id: the bypass addresses reach the target group; choose one, or leave maintenance_bypass empty')
      break
    case 'static':
      break
  }
}

function _targetHost(target: string): string {
  if (!/^https?:\/\//i.test(target)) return target.toLowerCase()
  try {
    return new URL(target).hostname.toLowerCase()
  } catch {
    return ''
  }
}
