import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startCaddy, type CaddyHandle } from '../support/caddy'
import { eventually, presentedCertificate } from '../support/http'
import { startPebble } from '../support/pebble'
import { freePort } from '../support/ports'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream } from '../support/upstream'

// Certificates obtained once, served by all (docs/scaling.md, issue 24 item 3):
// three production Caddy nodes on loopback, all given the one storage the panel
// pushes (PROXY_DATA_DIR, here node 1's storage folder), Pebble as the CA for
// one host on HTTP-01. The nodes share the HTTP and HTTPS ports (SO_REUSEPORT),
// so Pebble's validation reaches whichever node the kernel picks: any node must
// answer the challenge from the shared storage. What one node presents is read
// while the other two are stopped.
//
// No renewal here: certmagic (v0.25.6 in this Caddy) renews at every load a
// certificate with less than five maintenance intervals left (50 min with
// Caddy's default renew_interval of 10 min), so a short-lived Pebble certificate
// is renewed by each node that loads it; a due-but-not-imminent renewal would
// need an hour's wait (docs/scaling.md).

const DOMAIN = 'shared.example.test'
let up: Awaited<ReturnType<typeof startTestUpstream>>
let pebble: Awaited<ReturnType<typeof startPebble>>
let issuingRoot: string
let stack: ProxyStack
let second: CaddyHandle
let third: CaddyHandle
let firstSeen: NonNullable<Awaited<ReturnType<typeof presentedCertificate>>>

/** Certificates Pebble issued so far (one log line per issued certificate). */
const issuedByPebble = () => readFileSync(pebble.pebbleLogFile, 'utf8').match(/Issued certificate serial/g)?.length ?? 0
const apps = async (caddy: CaddyHandle) => JSON.stringify(((await caddy.getConfig()) as { apps?: unknown } | null)?.apps ?? null)
const presented = () => presentedCertificate(stack.httpsPort, DOMAIN, issuingRoot)

async function nodes() {
  const res = await stack.panel.request('/api/nodes', { cookie: stack.admin })
  expect(res.status).toBe(200)
  return res.json as Array<Record<string, any>>
}
/** Certificates the nodes got from the CA, from their own logs (each line is one download of an issued certificate). */
const downloadedByNodes = () =>
  [stack.caddy, second, third].reduce(
    (n, c) => n + (readFileSync(c.logFile, 'utf8').match(/successfully downloaded available certificate chains/g)?.length ?? 0),
    0,
  )
/** A serial in hex, upper case, without leading zeros (Pebble and Node pad differently). */
const serial = (hex: string | undefined) => hex?.toUpperCase().replace(/^0+/, '')
/** The serial Pebble logged for the last certificate it issued. */
const lastSerialIssued = () =>
  serial([...readFileSync(pebble.pebbleLogFile, 'utf8').matchAll(/Issued certificate serial (\w+)/g)].at(-1)?.[1])

/** Restarts a node other than node 1 with its bootstrap only; the loop gives it the current configuration. */
async function restartAndHeal(caddy: CaddyHandle) {
  await caddy.restart()
  const wanted = await apps(stack.caddy)
  await eventually(
    () => apps(caddy),
    (a) => a === wanted,
    20_000,
  )
}
/** Node 1 restarts with its bootstrap only; the loop pushes the current configuration to it. */
async function restartFirst() {
  await stack.caddy.restart()
  await eventually(
    () => apps(stack.caddy),
    (a) => a.includes(DOMAIN),
    20_000,
  )
}
/** The certificate on the shared HTTPS port while `only` is the one node running. */
async function presentedBy(only: CaddyHandle, fingerprint: string) {
  for (const c of [stack.caddy, second, third])
    expect(
      await c.getConfig().then(
        () => true,
        () => false,
      ),
    ).toBe(c === only)
  return eventually(presented, (c) => c?.fingerprint256 === fingerprint, 20_000, 300)
}
/**
 * From all three running: what each node presents while it alone runs. Nodes 2 and 3 are
 * restarted on the way (they load the certificate from the shared storage); at the end
 * only node 3 runs.
 */
async function eachNodePresents(fingerprint: string) {
  await second.stop()
  await third.stop()
  expect((await presentedBy(stack.caddy, fingerprint))?.fingerprint256).toBe(fingerprint)
  await restartAndHeal(second)
  await stack.caddy.stop()
  expect((await presentedBy(second, fingerprint))?.fingerprint256).toBe(fingerprint)
  await restartFirst()
  await restartAndHeal(third)
  await stack.caddy.stop()
  await second.stop()
  expect((await presentedBy(third, fingerprint))?.fingerprint256).toBe(fingerprint)
}

beforeAll(async () => {
  const httpPort = await freePort()
  const httpsPort = await freePort()
  up = await startTestUpstream()
  pebble = await startPebble({ httpPort, tlsPort: httpsPort })
  issuingRoot = await pebble.issuingRootPem()
  stack = await startProxyStack({ httpPort, httpsPort, env: { PROXY_ACME_TRUSTED_ROOTS: pebble.caPemFile } })
  second = await startCaddy()
  third = await startCaddy()
  for (const [name, node] of [
    ['node-2', second],
    ['node-3', third],
  ] as const) {
    const res = await stack.panel.request('/api/nodes', {
      method: 'POST',
      cookie: stack.admin,
      body: { name, admin_url: node.adminUrl },
    })
    expect(res.status).toBe(201)
  }
  await eventually(nodes, (l) => l.length === 3 && l.every((n) => n.status.in_sync === true), 20_000)
}, 90_000)

afterAll(async () => {
  await stack?.stop()
  await second?.stop()
  await third?.stop()
  await pebble?.stop()
  await up?.stop()
})

describe('three nodes sharing one certificate storage', () => {
  it('pushes the same file-system storage (PROXY_DATA_DIR) to every node', async () => {
    for (const caddy of [stack.caddy, second, third])
      expect(((await caddy.getConfig()) as any).storage).toEqual({ module: 'file_system', root: stack.caddy.storageDir })
  })

  it('obtains the certificate of an ACME host once from the CA, while all three nodes manage it', async () => {
    expect(issuedByPebble()).toBe(0)
    const group = await createGroup(stack, { name: 'shared', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const res = await createHost(stack, {
      domain: DOMAIN,
      target_group_id: group.id,
      tls_mode: 'auto',
      tls_challenge: 'http',
      tls_acme_ca_url: pebble.directoryUrl,
      tls_email: 'ops@example.test',
    })
    expect(res.status).toBe(201)
    expect(res.json.reconcile.status).toBe('applied')
    // Every node took the configuration (a node that did not would be named in a warning).
    expect((res.json.reconcile.warnings ?? []).filter((w: string) => /^node /.test(w))).toEqual([])
    for (const caddy of [stack.caddy, second, third]) expect(await apps(caddy)).toContain(DOMAIN)
    const cert = await eventually(presented, (c) => !!c && /Pebble/.test(c.issuer), 30_000, 300)
    expect(cert).toMatchObject({ subject: DOMAIN, authorized: true })
    firstSeen = cert!
    expect(serial(cert!.serialNumber)).toBe(lastSerialIssued())
    // The node that holds the storage's lock obtains it; the other two find it in the storage.
    expect(issuedByPebble()).toBe(1)
  })

  it('every node presents that same certificate, restarted nodes included, without asking the CA again', async () => {
    await eachNodePresents(firstSeen.fingerprint256)
    expect(issuedByPebble()).toBe(1)
    expect(downloadedByNodes()).toBe(1)
  })
})
