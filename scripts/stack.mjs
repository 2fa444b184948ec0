// npm run stack: the built panel with the production Caddy (every plugin) and
// the whole CrowdSec engine (agent reading the proxy's logs, local API) on
// loopback, both built by scripts/build-edge.sh, started with the same code as the integration tests
// (tests/support/), plus a demo upstream and a demo host. Prints the URLs and
// the login, and stops everything on Ctrl-C or SIGTERM.
//
// Everything stays on loopback: a small geolocation database (documentation
// networks only) is served here and the panel's geolocation URLs point at it,
// and a local ACME CA (Pebble, whose DNS answers 127.0.0.1 for every name) is
// the default ACME directory, so a host with Automatic TLS gets a certificate
// without a public CA seeing the request.
//
//   npm run stack                 (builds the panel first when a source is newer)
//   SKIP_PANEL_BUILD=1 npm run stack
//   npm run stack -- --no-demo    (no demo upstream/host)
//   npm run stack -- --public-acme  (no local ACME CA: the proxy's default, a public CA, as in production)
//
// Everything lives in temporary folders that are removed on exit: this is a
// place to look around, not to keep data.
//
// The last line printed once everything is up is `STACK_READY {json}` (URLs,
// ports, PIDs) for scripts and tests/integration/stack.test.ts.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createJiti } from 'jiti'

const root = fileURLToPath(new URL('..', import.meta.url))
const withDemo = !process.argv.includes('--no-demo')
const localAcme = !process.argv.includes('--public-acme')
// tests/support is TypeScript with extensionless imports: jiti (already a Nitro dependency) loads it.
const jiti = createJiti(import.meta.url, { alias: { '~': root } })
const support = await jiti.import('../tests/support/index.ts')
const demoSupport = await jiti.import('../tests/support/demo.ts')
const { removeTempDirs } = await jiti.import('../tests/support/processes.ts')

const log = (line) => process.stdout.write(`[stack] ${line}\n`)
const started = [] // stop order: last started first
let stopping = false

async function stopAll(reason) {
  if (stopping) return
  stopping = true
  log(`stopping (${reason})...`)
  for (const { name, stop } of started.reverse()) {
    try {
      await stop()
    } catch (err) {
      log(`${name}: ${err.message}`)
    }
  }
  removeTempDirs()
  log('stopped')
}

// Our own handlers replace the test harness's (which SIGKILL at once): stop in
// order, then exit. A second signal exits at once; the exit hook of
// tests/support/processes.ts still kills whatever is left.
const stopAndExit = (reason) =>
  stopAll(reason).then(
    () => process.exit(0),
    () => process.exit(1),
  )
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.removeAllListeners(sig)
  process.on(sig, () => {
    if (stopping) process.exit(130)
    stopAndExit(sig)
  })
}
// Under `npm run stack` the script is npm's direct child (package.json runs it with `exec`, so no shell
// sits between them and swallows the SIGTERM npm forwards). Should npm die without forwarding (SIGKILL),
// this process is re-parented: stop then rather than leave the proxy and the engine running.
if (process.env.npm_lifecycle_event === 'stack') {
  const parent = process.ppid
  setInterval(() => {
    if (process.ppid !== parent) stopAndExit('npm, the parent process, is gone')
  }, 1000).unref()
}

try {
  if (process.env.SKIP_PANEL_BUILD !== '1') {
    log('building the panel when stale (SKIP_PANEL_BUILD=1 skips this)...')
    if (support.ensureBuilt(root)) log('built')
  }
  const caddy = await support.startCaddy()
  started.push({ name: 'caddy', stop: () => caddy.stop() })
  log(`caddy ${caddy.adminUrl} (admin API, loopback only), pid ${caddy.pid}`)
  const logDir = support.makeTempDir('stack-proxy-logs-')
  const crowdsec = await support.startCrowdsec({ logDir })
  started.push({ name: 'crowdsec', stop: () => crowdsec.stop() })
  log(`crowdsec local API ${crowdsec.url} (agent reading ${logDir}), pid ${crowdsec.pid}`)
  const [httpPort, httpsPort, panelPort] = await support.freePorts(3)
  let pebble = null
  let acmeRootFile = null
  if (localAcme) {
    // Pebble validates http-01 and tls-alpn-01 against the proxy's own ports on loopback.
    pebble = await support.startPebble({ httpPort, tlsPort: httpsPort })
    started.push({ name: 'pebble', stop: () => pebble.stop() })
    // The root that signs the issued certificates, for curl --cacert (a new one on every start).
    acmeRootFile = join(pebble.workDir, 'issuing-root.pem')
    writeFileSync(acmeRootFile, await pebble.issuingRootPem())
    log(`local ACME CA (Pebble) ${pebble.directoryUrl}, pids ${pebble.pebblePid} and ${pebble.challtestsrvPid}`)
  }
  const geo = await demoSupport.serveDemoGeo()
  started.push({ name: 'geolocation files', stop: () => geo.stop() })
  log(`geolocation databases ${geo.countryUrl} and ${geo.asnUrl}`)
  // The panel's public URL, http://localhost:<port>, lets ForwardAuth send a visitor to a
  // login page that works and back (tests/support/demo.ts says why).
  const panel = await support.startPanel({
    port: panelPort,
    env: {
      ...demoSupport.demoPanelEnv(panelPort),
      PROXY_ADMIN_URL: caddy.adminUrl,
      PROXY_MODULES: support.ALL_PROXY_MODULES,
      PROXY_LOG_DIR: logDir,
      PROXY_DATA_DIR: caddy.storageDir,
      PROXY_HTTP_LISTEN: `127.0.0.1:${httpPort}`,
      PROXY_HTTPS_LISTEN: `127.0.0.1:${httpsPort}`,
      ...support.panelEnvFor(crowdsec),
      // The defaults of Settings -> Geolocation: the panel downloads them at its first start.
      GEOIP_COUNTRY_URL: geo.countryUrl,
      GEOIP_ASN_URL: geo.asnUrl,
      // The proxy trusts Pebble's own HTTPS certificate when it talks ACME to it.
      ...(pebble ? { PROXY_ACME_TRUSTED_ROOTS: pebble.caPemFile } : {}),
    },
  })
  started.push({ name: 'panel', stop: () => panel.stop() })
  log(`panel ${panel.url}, pid ${panel.pid}`)
  const cookie = await panel.login()
  if (pebble) {
    // The default ACME directory (Settings -> TLS), so a host with Automatic TLS and no CA of its own uses Pebble.
    const set = await panel.request('/api/settings', { method: 'PUT', cookie, body: { 'acme.ca_url': pebble.directoryUrl } })
    if (set.status !== 200) throw new Error(`setting the ACME directory to Pebble failed: ${set.status} ${set.text}`)
  }

  let demo = null
  if (withDemo) {
    const upstream = await support.startTestUpstream()
    started.push({ name: 'demo upstream', stop: () => upstream.stop() })
    const hosts = await demoSupport.createDemoHosts(panel, cookie, upstream.port)
    demo = {
      domain: demoSupport.DEMO_OPEN_HOST,
      protected: `http://${demoSupport.DEMO_PROTECTED_HOST}:${httpPort}/`,
      upstream: upstream.url,
      reconcile: hosts[demoSupport.DEMO_OPEN_HOST].reconcile,
    }
  }

  const ready = {
    panel: panel.url,
    public_url: demoSupport.demoPanelEnv(panelPort).PANEL_PUBLIC_URL,
    docs: `${panel.url}/api/docs`,
    login: { email: support.ADMIN.email, password: support.ADMIN.password },
    proxy: { http: `http://127.0.0.1:${httpPort}`, https: `https://127.0.0.1:${httpsPort}`, admin: caddy.adminUrl },
    lapi: crowdsec.url,
    cscli: `${support.crowdsecBinaries().cscli} -c ${crowdsec.configFile}`,
    proxy_log_dir: logDir,
    data_dir: panel.dataDir,
    geoip: { country_url: geo.countryUrl, asn_url: geo.asnUrl, countries: Object.keys(demoSupport.DEMO_COUNTRIES) },
    acme: pebble ? { directory: pebble.directoryUrl, issuing_root_pem_file: acmeRootFile } : null,
    demo,
    pids: {
      stack: process.pid,
      panel: panel.pid,
      caddy: caddy.pid,
      crowdsec: crowdsec.pid,
      ...(pebble ? { pebble: pebble.pebblePid, challtestsrv: pebble.challtestsrvPid } : {}),
    },
  }
  process.stdout.write(`
  Panel        ${ready.panel}    (API reference: ${ready.docs}; visitors are sent to ${ready.public_url}/login)
  Login        ${ready.login.email} / ${ready.login.password}
  Proxy        ${ready.proxy.http} and ${ready.proxy.https} (admin API ${ready.proxy.admin}, loopback only)
  Local API    ${ready.lapi}
  Geolocation  ${ready.geoip.country_url} (countries ${ready.geoip.countries.join(', ')}, documentation networks only)
  ACME CA      ${pebble ? `${pebble.directoryUrl} (Pebble, local: a host with Automatic TLS gets its certificate here;\n               curl --cacert ${acmeRootFile} --resolve NAME:${httpsPort}:127.0.0.1 https://NAME:${httpsPort}/)` : "the proxy's default, a public CA (--public-acme): an Automatic TLS host asks it at once"}
${demo ? `  Demo host    curl -H 'Host: ${demo.domain}' ${ready.proxy.http}/   (served by ${demo.upstream})\n  ForwardAuth  open ${demo.protected} in a browser on this machine: the panel's login, then the page\n` : ''}
  Log in:      curl -c /tmp/panel.cookies -H 'content-type: application/json' \\
                 -d '{"email":"${ready.login.email}","password":"${ready.login.password}"}' ${ready.panel}/api/auth/login
  A ban:       ${ready.cscli} decisions add --ip 198.51.100.7 --duration 1h
               then: curl -b /tmp/panel.cookies ${ready.panel}/api/security/decisions
               the proxy's bouncer enforces it at its next poll (security_engine.ticker_interval, 15 s by default)
  Ctrl-C (or a SIGTERM to this script, pid ${process.pid}, or to npm) stops everything and removes the temporary folders.

STACK_READY ${JSON.stringify(ready)}
`)
} catch (err) {
  log(`start failed: ${err.stack ?? err.message}`)
  await stopAll('start failed')
  process.exit(1)
}
