import { getConfig } from '../core/config'
import { LAN_RANGES } from './build/lan-gate'

const _LOOPBACK_HOST = /^(localhost|127(\.\d+){3}|\[::1\])$/i

/**
 * What the per-host switches do, for the host form to say so: the sources the
 * LAN-only gate lets through, and where ForwardAuth sends a visitor who is not
 * signed in (the panel's public URL), with a warning when that address cannot
 * work for visitors on other machines.
 */
export function describeGates() {
  const { publicUrl, domain } = getConfig()
  const host = new URL(publicUrl).hostname
  const warnings: string[] = []
  if (_LOOPBACK_HOST.test(host)) {
    warnings.push(
      `the login page is on ${host}, which a visitor's browser takes for its own machine: set PANEL_PUBLIC_URL to the address visitors reach the panel at`,
    )
  }
  return {
    lan_ranges: [...LAN_RANGES],
    forward_auth: {
      login_url: `${publicUrl}/login`,
      // rd (the page asked for) is kept only for hosts on the panel's domain or under its parent.
      returns_to_requested_page_under: domain,
      warnings,
    },
  }
}
