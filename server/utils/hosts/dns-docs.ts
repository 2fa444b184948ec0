import { DNS_PROVIDER_CATALOGUE, type DnsProviderDefinition } from './dns-catalogue'

// The provider list of docs/tls.md, generated from the declarations so the
// operator's page cannot drift from what the panel accepts: a unit test
// (tests/unit/dns-catalogue.test.ts) compares the page with this text.

export const DNS_DOC_START =
  '<!-- dns-providers:start (generated from server/utils/hosts/dns-catalogue.ts; see tests/unit/dns-catalogue.test.ts) -->'
export const DNS_DOC_END = '<!-- dns-providers:end -->'

const _cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ')

function _provider(def: DnsProviderDefinition): string {
  const lines = [
    `### ${def.display_name} (\`${def.name}\`)`,
    '',
    `Proxy module \`${def.proxy_module}\`. Where to get the credentials: ${def.docs_url}`,
    '',
    ...(def.one_of_required ? [`At least one of ${def.one_of_required.map((k) => `\`${k}\``).join(', ')} is required.`, ''] : []),
    '| Field | Required | Kept secret | Where to find it | Format |',
    '|---|---|---|---|---|',
  ]
  for (const f of def.declared) {
    const shown = f.secret ? 'yes: masked in the form, redacted' : f.public ? 'no' : "redacted from the proxy's words"
    lines.push(
      `| \`${f.key}\` ${_cell(f.label)} | ${f.required ? 'yes' : 'no'} | ${shown} | ${_cell(f.where)} | ${_cell(f.format.rule.replace(/^must be /, ''))} |`,
    )
  }
  return lines.join('\n')
}

/** The generated section, markers included. */
export function dnsProvidersDoc(): string {
  return [DNS_DOC_START, '', ...DNS_PROVIDER_CATALOGUE.map(_provider).flatMap((p) => [p, '']), DNS_DOC_END].join('\n')
}
