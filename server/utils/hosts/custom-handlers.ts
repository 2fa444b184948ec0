import type { H3Error } from 'h3'
import { badRequest } from '../core/errors'
import type { HostInput } from './schemas'

const _PROXY_REJECTED = 'proxy rejected configuration: '

/**
 * A host change that carries custom handlers (docs/hosts.md, "Custom handlers"): when
 * the proxy refuses the configuration, the snippet is the operator's input, so the
 * answer is a 400 naming the field, with the proxy's own words (already redacted by the
 * reconciler). The proxy's /load is all or nothing and the transaction is rolled back:
 * nothing was pushed and nothing saved, and the other hosts are served as before.
 */
export async function refusedCustomHandlersAsBadInput<T>(input: HostInput, change: () => Promise<T>): Promise<T> {
  try {
    return await change()
  } catch (err) {
    const message = (err as H3Error).message
    if (input.custom_handlers?.length && (err as H3Error).statusCode === 502 && message?.startsWith(_PROXY_REJECTED))
      throw badRequest(
        `custom_handlers: the proxy refused the configuration with these handlers; nothing was saved or pushed. The proxy said: ${message.slice(_PROXY_REJECTED.length)}`,
      )
    throw err
  }
}
