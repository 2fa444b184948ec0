import { readFileSync, writeFileSync } from 'node:fs'
import { expect } from 'vitest'
import { startCaddy, type CaddyHandle } from './caddy'
import { eventually, presentedAt, type PresentedCertificate } from './http'
import { createNodeNamespaces, type NodeNamespace } from './netns'
import { startPebble, type PebbleHandle } from './pebble'
import { freePort } from './ports'
import { makeTempDir } from './processes'
import { ALL_PROXY_MODULES, createGroup, createHost, startProxyStack, type ProxyStack } from './proxy-stack'
import { startTestUpstream } from './upstream'

// Three proxy nodes as three machines (issue 41's "Done when"): each production
// Caddy in a network namespace of its own (netns.ts), optionally with a file
// system of its own too (caddy.ts `privateFs`: no node sees another's folders or
// the panel's PROXY_DATA_DIR), the panel driving them, and Pebble as the CA on
// the host end of node 1's veth pair, which every namespace routes to. The one
// configuration listens on every address of a namespace (`:port`), so each node
// serves HTTP and HTTPS at its own address. Pebble's DNS points every ACME name
// at node 1, the canary of every roll: it holds a new host before any other node
// orders its certificate, so the CA's validation never lands on a node the roll
// has not reached (docs/scaling.md, "Any node answers the challenge").

export interface Fleet {
  machines: NodeNamespace[]
  stack: ProxyStack
  /** Node 1 (stack.caddy), node 2, node 3. */
  nodes: CaddyHandle[]
  /** Their ids in /api/nodes, in the same order. */
  nodeIds: number[]
  pebble: PebbleHandle
  /** A second Pebble issuing short certificates (opts.shortValiditySeconds), or null. */
  shortPebble: PebbleHandle | null
  /** The panel's PROXY_DATA_DIR (with privateFs, a folder no node sees). */
  panelDataDir: string
  /** The CA bundle (both Pebbles' HTTPS certificates) the issuers trust; each private node has its own copy. */
  trustedRoots: string
  api(path: string, method?: string, body?: unknown): ReturnType<ProxyStack['panel']['request']>
  /** GET /api/nodes. */
  listNodes(): Promise<Array<Record<string, any>>>
  /** What node k (0, 1, 2) presents at its own address for `name` (null when the handshake fails). */
  presentedBy(k: number, name: string): Promise<PresentedCertificate | null>
  /** A host on HTTP-01 with `ca` (default Pebble) as its CA; created and pushed to every node. */
  createAcmeHost(domain: string, ca?: PebbleHandle): Promise<Record<string, any>>
  /** Certificates a Pebble issued so far. */
  issued(ca?: PebbleHandle): number
  /** The serial of the last certificate a Pebble issued (hex, upper case, no leading zeros). */
  lastSerialIssued(ca?: PebbleHandle): string | undefined
  stop(): Promise<void>
}

/** A serial in hex, upper case, without leading zeros (Pebble and Node pad differently). */
export const normalSerial = (hex: string | undefined) => hex?.toUpperCase().replace(/^0+/, '')

export async function startFleet(
  opts: {
    /** Each node with a file system of its own (no shared folder at all). */
    privateFs?: boolean
    /** Also start a second Pebble whose certificates live this many seconds (the renewal). */
    shortValiditySeconds?: number
    /** More panel environment (PROXY_RENEW_INTERVAL_SECONDS...). */
    env?: Record<string, string>
    /** More environment of the (first) Pebble: PEBBLE_VA_NOSLEEP=0 lets an order stay in flight. */
    pebbleEnv?: Record<string, string>
  } = {},
): Promise<Fleet> {
  const ns = await createNodeNamespaces(3)
  const [a, b, c] = ns.nodes as [NodeNamespace, NodeNamespace, NodeNamespace]
  const started: Array<{ stop(): Promise<void> }> = []
  try {
    const httpPort = await freePort()
    const httpsPort = await freePort()
    const up = await startTestUpstream({ host: a.hostAddress })
    started.push(up)
    const pebble = await startPebble({ httpPort, tlsPort: httpsPort, listenHost: a.hostAddress, env: opts.pebbleEnv })
    started.push(pebble)
    const shortPebble = opts.shortValiditySeconds
      ? await startPebble({
          httpPort,
          tlsPort: httpsPort,
          listenHost: a.hostAddress,
          certificateValiditySeconds: opts.shortValiditySeconds,
        })
      : null
    if (shortPebble) started.push(shortPebble)
    const trustedRoots = `${makeTempDir('acme-roots-')}/acme-roots.pem`
    writeFileSync(trustedRoots, pebble.caPem + (shortPebble?.caPem ?? ''))
    // With private file systems the panel's PROXY_DATA_DIR is a folder of its own that no
    // node sees; on a shared folder it is node 1's storage folder, which every node reaches.
    const privateFs = opts.privateFs ? { copies: [trustedRoots] } : undefined
    const panelDataDir = opts.privateFs ? makeTempDir('panel-proxy-data-') : ''
    const stack = await startProxyStack({
      caddyNetns: a,
      caddyPrivateFs: privateFs,
      httpPort,
      httpsPort,
      env: {
        PROXY_HTTP_LISTEN: `:${httpPort}`,
        PROXY_HTTPS_LISTEN: `:${httpsPort}`,
        PROXY_ACME_TRUSTED_ROOTS: trustedRoots,
        // The production build's storage module (panel_redis and /panel/storage/*).
        PROXY_MODULES: `${ALL_PROXY_MODULES},storage`,
        ...(panelDataDir ? { PROXY_DATA_DIR: panelDataDir } : {}),
        ...opts.env,
      },
    })
    started.push(stack)
    const nodes = [stack.caddy]
    for (const m of [b, c]) {
      const node = await startCaddy({ netns: m, privateFs })
      started.push(node)
      nodes.push(node)
    }
    const api: Fleet['api'] = (path, method = 'GET', body) => stack.panel.request(path, { method, body, cookie: stack.admin })
    const nodeIds = [1]
    for (const [i, node] of [nodes[1]!, nodes[2]!].entries()) {
      const res = await api('/api/nodes', 'POST', { name: `edge-${i + 2}`, admin_url: node.adminUrl })
      expect(res.status, res.text).toBe(201)
      nodeIds.push((res.json as { id: number }).id)
    }
    const listNodes = async () => {
      const res = await api('/api/nodes')
      expect(res.status, res.text).toBe(200)
      return res.json as Array<Record<string, any>>
    }
    const list = await eventually(listNodes, (l) => l.length === 3 && l.every((n) => n.status.in_sync === true), 30_000)
    expect(list.map((n) => n.status.in_sync)).toEqual([true, true, true])
    const groupId = (await createGroup(stack, { name: 'app', targets: [{ address: `${a.hostAddress}:${up.port}` }] })).id
    const issued = (ca = pebble) => readFileSync(ca.pebbleLogFile, 'utf8').match(/Issued certificate serial/g)?.length ?? 0
    return {
      machines: ns.nodes,
      stack,
      nodes,
      nodeIds,
      pebble,
      shortPebble,
      panelDataDir: panelDataDir || stack.caddy.storageDir,
      trustedRoots,
      api,
      listNodes,
      presentedBy: (k, name) => presentedAt(ns.nodes[k]!.address, httpsPort, name),
      async createAcmeHost(domain, ca = pebble) {
        await ca.addA(domain, [a.address])
        const res = await createHost(stack, {
          domain,
          target_group_id: groupId,
          tls_mode: 'auto',
          tls_challenge: 'http',
          tls_acme_ca_url: ca.directoryUrl,
          tls_email: 'ops@example.test',
        })
        expect(res.status, res.text).toBe(201)
        expect(res.json.reconcile.status).toBe('applied')
        // Every node took the configuration (a node that did not would be named in a warning).
        expect((res.json.reconcile.warnings ?? []).filter((w: string) => /^node /.test(w))).toEqual([])
        return res.json as Record<string, any>
      },
      issued,
      lastSerialIssued: (ca = pebble) =>
        normalSerial([...readFileSync(ca.pebbleLogFile, 'utf8').matchAll(/Issued certificate serial (\w+)/g)].at(-1)?.[1]),
      async stop() {
        for (const s of started.reverse()) await s.stop().catch(() => {})
        await ns.destroy()
      },
    }
  } catch (err) {
    for (const s of started.reverse()) await s.stop().catch(() => {})
    await ns.destroy()
    throw err
  }
}
