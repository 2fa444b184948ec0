// The steps of a DNS provider's credentials check (docs/dns-check.md) in words, on the provider and host screens.
export const DNS_CHECK_STEP_WORDS: Record<string, string> = {
  authenticate: 'Credentials',
  write: 'Write the TXT record',
  visible: 'Seen at the authoritative servers',
  delegation: 'Delegation CNAME',
  remove: 'Remove the TXT record',
}
