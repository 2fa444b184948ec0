import type { OperationDoc } from '../registry'
import { authOperations } from './auth'
import { hostsOperations } from './hosts'
import { accessListOperations } from './access-lists'
import { streamsOperations } from './streams'
import { importOperations } from './import'
import { tlsOperations } from './tls'
import { securityOperations } from './security'
import { countriesOperations } from './countries'
import { logsOperations } from './logs'
import { opsOperations } from './ops'
import { systemOperations } from './system'
import { revisionsOperations, withDryRun } from './revisions'
import { nodesOperations } from './nodes'
import { accessOperations } from './access'

/** Every area, in the order the reference shows them (the tag of each operation). */
export const API_AREAS: Array<{ tag: string; description: string; operations: OperationDoc[] }> = [
  { tag: 'auth', description: 'Sessions, first-run setup, ForwardAuth', operations: authOperations },
  { tag: 'hosts', description: 'Hosts, target groups, path rules', operations: hostsOperations },
  { tag: 'access-lists', description: 'Basic auth and IP allow/deny lists shared by hosts', operations: accessListOperations },
  { tag: 'streams', description: 'TCP and UDP forwarding beside the web hosts', operations: streamsOperations },
  { tag: 'import', description: 'Importing a Caddyfile or an nginx-proxy-manager database', operations: importOperations },
  { tag: 'tls', description: 'DNS-01 providers, manual certificates', operations: tlsOperations },
  { tag: 'security', description: 'Decisions, whitelist, scenarios, drift, AppSec tuning', operations: securityOperations },
  { tag: 'countries', description: 'Country bans, expansion jobs, geolocation', operations: countriesOperations },
  { tag: 'access', description: 'Geo and network policies: what one would refuse, tried on past traffic', operations: accessOperations },
  { tag: 'logs', description: 'Log rows, statistics, live tail', operations: logsOperations },
  { tag: 'ops', description: 'Notifications, backups, dashboards', operations: opsOperations },
  { tag: 'system', description: 'Health, settings, users, this reference', operations: systemOperations },
  { tag: 'nodes', description: 'Proxy nodes: the registry, rolling push status', operations: nodesOperations },
  {
    tag: 'revisions',
    description: 'Revisions of the proxy configuration, diffs, revert (and ?dry_run=1 on mutations)',
    operations: revisionsOperations,
  },
].map((area) => ({ ...area, operations: area.operations.map(withDryRun) }))
