import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { PROXY_MODULE_NAMES } from '~/server/utils/core/config'
import { WAF_AUDIT_SCENARIO } from '~/server/utils/security/profiles'
import { APPSEC_PLUGIN_FILE } from '~/server/utils/security/appsec'
import { APPSEC_THRESHOLD_HEADER } from '~/server/utils/proxy/build/crowdsec'
import { DISABLED_SCENARIOS_FILE, renderDisabledScenariosFile } from '~/server/utils/security/scenarios'
import { PANEL_NODE_FLAGS } from '../../scripts/node-flags.mjs'
import { REPO_ROOT } from '../support/build'

// deploy/: the images and the compose stack cannot be built here (no container
// engine), so their structure is checked: the Dockerfiles parse into known
// instructions with the properties the deployment relies on, and the compose
// file is consistent and names every variable the panel reads.

const DEPLOY = join(REPO_ROOT, 'deploy')
const read = (p: string) => readFileSync(join(DEPLOY, p), 'utf8')

// ---- a small Dockerfile reader: continuation lines joined, comments dropped ----
const INSTRUCTIONS = new Set([
  'FROM',
  'RUN',
  'CMD',
  'LABEL',
  'EXPOSE',
  'ENV',
  'ADD',
  'COPY',
  'ENTRYPOINT',
  'VOLUME',
  'USER',
  'WORKDIR',
  'ARG',
  'ONBUILD',
  'STOPSIGNAL',
  'HEALTHCHECK',
  'SHELL',
])
interface Instruction {
  name: string
  args: string
  line: number
}
interface Stage {
  from: string
  alias?: string
  instructions: Instruction[]
}

function parseDockerfile(text: string): { stages: Stage[]; globalArgs: Instruction[] } {
  const out: Instruction[] = []
  let buffer = '',
    startLine = 0
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/\r$/, '')
    if (!buffer && (/^\s*#/.test(line) || !line.trim())) return
    if (buffer && /^\s*#/.test(line)) return // comments inside a continued instruction
    if (!buffer) startLine = i + 1
    buffer += (buffer ? ' ' : '') + line.trim().replace(/\\$/, '').trim()
    if (/\\\s*$/.test(line)) return
    const m = /^(\w+)\s+([\s\S]*)$/.exec(buffer)
    if (!m) throw new Error(`line ${startLine}: not an instruction: ${buffer}`)
    const name = m[1]!.toUpperCase()
    if (!INSTRUCTIONS.has(name)) throw new Error(`line ${startLine}: unknown instruction ${m[1]}`)
    out.push({ name, args: m[2]!, line: startLine })
    buffer = ''
  })
  if (buffer) throw new Error('the last instruction ends with a line continuation')
  const stages: Stage[] = []
  const globalArgs: Instruction[] = []
  for (const ins of out) {
    if (ins.name === 'FROM') {
      const [from, as, alias] = ins.args.split(/\s+/)
      stages.push({ from: from!, alias: as?.toUpperCase() === 'AS' ? alias : undefined, instructions: [] })
    } else if (!stages.length) {
      if (ins.name !== 'ARG') throw new Error(`line ${ins.line}: ${ins.name} before the first FROM`)
      globalArgs.push(ins)
    } else stages.at(-1)!.instructions.push(ins)
  }
  return { stages, globalArgs }
}
const all = (s: Stage, name: string) => s.instructions.filter((i) => i.name === name)
const last = (s: Stage, name: string) => all(s, name).at(-1)

// ---- the variables the panel reads, from config.ts itself ----
function panelVariables(): { names: string[]; aliases: Map<string, string> } {
  const src = readFileSync(join(REPO_ROOT, 'server/utils/core/config.ts'), 'utf8')
  const names = new Set<string>()
  // Every reader of a variable names it as its first string: _opt(env, 'X'), _list(env, 'X', …),
  // _httpUrl(env, errors, 'X', …), _readListen(env, errors, 'X', …), and the table of whole numbers ({ name: 'X', … }).
  for (const m of src.matchAll(/(?:_opt|_list|_httpUrl|_readListen)\(env, (?:errors, )?'([A-Z0-9_]+)'/g)) names.add(m[1]!)
  for (const m of src.matchAll(/\bname: '([A-Z0-9_]+)'/g)) names.add(m[1]!)
  for (const m of src.matchAll(/\benv\.([A-Z0-9_]+)/g)) names.add(m[1]!)
  // `_opt(env, 'PORT') ?? _opt(env, 'NITRO_PORT')`: the second is another name for the first.
  const aliases = new Map<string, string>()
  for (const m of src.matchAll(/_opt\(env, '([A-Z0-9_]+)'\) \?\? _opt\(env, '([A-Z0-9_]+)'\)/g)) aliases.set(m[2]!, m[1]!)
  // PANEL_TEST_* are test hooks (docs/testing.md), never part of a deployment.
  return { names: [...names].filter((n) => !n.startsWith('PANEL_TEST_')).sort(), aliases }
}

describe('.dockerignore', () => {
  it("keeps the host's modules, builds and databases out of the image build", () => {
    const ignored = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'))
    for (const p of ['node_modules', '.output', '.data', 'data', 'ui/dist']) expect(ignored, `.dockerignore must list ${p}`).toContain(p)
  })
})

describe('deploy/panel/Dockerfile', () => {
  const { stages } = parseDockerfile(read('panel/Dockerfile'))
  const runtime = stages.at(-1)!

  it('is multi-stage on the official Node 24 slim image', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2)
    for (const s of stages) expect(s.from).toBe('node:24-slim')
  })

  it('builds in the first stage and ships only the bundle (production dependencies traced by Nitro)', () => {
    expect(
      all(stages[0]!, 'RUN')
        .map((r) => r.args)
        .join('\n'),
    ).toMatch(/npm ci[\s\S]*npm run build/)
    const copies = all(runtime, 'COPY').map((c) => c.args)
    const fromBuild = copies.filter((c) => c.includes('--from='))
    expect(fromBuild).toEqual([expect.stringMatching(/--from=build \/src\/\.output \.\/\.output$/)])
    expect(
      all(runtime, 'RUN')
        .map((r) => r.args)
        .join('\n'),
    ).not.toMatch(/npm (ci|install)/)
  })

  it('runs as a non-root user, listens on 0.0.0.0, UTC, data in a volume, with a /healthz HEALTHCHECK', () => {
    const user = last(runtime, 'USER')?.args
    expect(user).toBeDefined()
    expect(user).not.toMatch(/^(root|0)(:|$)/)
    const env = all(runtime, 'ENV')
      .map((e) => e.args)
      .join(' ')
    expect(env).toMatch(/\bHOST=0\.0\.0\.0\b/)
    expect(env).toMatch(/\bTZ=UTC\b/)
    expect(env).toMatch(/\bNODE_ENV=production\b/)
    const dataDir = /\bPANEL_DATA_DIR=(\S+)/.exec(env)?.[1]
    expect(dataDir).toBeDefined()
    expect(JSON.parse(last(runtime, 'VOLUME')!.args)).toContain(dataDir)
    expect(last(runtime, 'HEALTHCHECK')!.args).toMatch(/CMD[\s\S]*\/healthz/)
    expect(JSON.parse(last(runtime, 'CMD')!.args)).toEqual(['node', ...PANEL_NODE_FLAGS, '/app/.output/server/index.mjs'])
  })

  it('its entrypoint turns every secret *_FILE into the variable config.ts reads', () => {
    const script = read('panel/entrypoint.sh')
    const list = /for name in ([A-Z_ ]+); do/.exec(script)![1]!.split(' ')
    const { names } = panelVariables()
    for (const n of list) expect(names, `${n} is not a variable of config.ts`).toContain(n)
    expect(list).toEqual(expect.arrayContaining(['PANEL_MASTER_KEY', 'LAPI_BOUNCER_KEY', 'LAPI_MACHINE_PASSWORD']))
    const sh = spawnSync('sh', ['-n', join(DEPLOY, 'panel/entrypoint.sh')])
    expect(sh.status, String(sh.stderr)).toBe(0)
  })
})

describe('deploy/proxy/Dockerfile', () => {
  const { stages } = parseDockerfile(read('proxy/Dockerfile'))
  const build = stages[0]!,
    runtime = stages.at(-1)!
  const goMod = read('proxy/caddy/go.mod'),
    mainGo = read('proxy/caddy/main.go')

  it('builds the Go module in deploy/proxy/caddy with its build.sh, the command the tests build with', () => {
    expect(build.from).toMatch(/^golang:1\.\d+/)
    const copies = all(build, 'COPY')
      .map((c) => c.args)
      .join(' ')
    for (const f of ['caddy/go.mod', 'caddy/go.sum']) expect(copies).toContain(f)
    // The whole folder after the module download: every package of the project's own is in the image.
    expect(copies).toMatch(/(^|\s)caddy\/ \.\/($|\s)/)
    // RE2 for the WAF's regex engine, linked statically by build.sh.
    expect(
      all(build, 'RUN')
        .map((r) => r.args)
        .join(' '),
    ).toMatch(/apt-get install[^&]*\blibre2-dev\b/)
    expect(all(build, 'RUN').some((r) => /\bsh build\.sh \/usr\/bin\/caddy\b/.test(r.args))).toBe(true)
    // The test build (scripts/build-edge.sh) runs the same script on the same folder.
    const script = readFileSync(join(REPO_ROOT, 'scripts/build-edge.sh'), 'utf8')
    expect(script).toContain('sh deploy/proxy/caddy/build.sh')
    const buildSh = read('proxy/caddy/build.sh')
    expect(buildSh).toMatch(/GOFLAGS=-mod=readonly/)
    expect(buildSh).toMatch(/-tags "\$tags"/)
    expect(buildSh).toMatch(/tags=re2_cgo,/)
    expect(buildSh).toMatch(/-extldflags -static/)
  })

  it('pins every plugin the panel can drive to a version, and imports it', () => {
    const required = new Map([...goMod.matchAll(/^\s*(\S+) (v\S+)(?: \/\/ indirect)?$/gm)].map((m) => [m[1]!, m[2]!]))
    const needs: Record<(typeof PROXY_MODULE_NAMES)[number], string[]> = {
      crowdsec: ['github.com/hslatman/caddy-crowdsec-bouncer'],
      waf: ['github.com/corazawaf/coraza-caddy/v2'],
      ratelimit: ['github.com/mholt/caddy-ratelimit'],
      dns: ['github.com/caddy-dns/cloudflare', 'github.com/caddy-dns/route53', 'github.com/caddy-dns/rfc2136'],
      // The geo matcher is the project's own package (imported below); the database reader it uses is pinned.
      geo: [],
      // panel_waf is the project's own handler (wafext), around coraza-caddy's.
      wafshare: ['github.com/corazawaf/coraza-caddy/v2'],
      // panel_redis and panel_storage are the project's own package (imported below); its Redis client is pinned.
      storage: [],
    }
    expect(required.get('github.com/oschwald/maxminddb-golang')).toMatch(/^v\d+\.\d+\.\d+$/)
    expect(mainGo).toContain('"github.com/edge-panel/edge-proxy/geoext"')
    expect(mainGo).toContain('"github.com/edge-panel/edge-proxy/storageext"')
    expect(required.get('github.com/redis/go-redis/v9')).toMatch(/^v9\.\d+\.\d+$/)
    for (const name of PROXY_MODULE_NAMES)
      for (const mod of needs[name]) {
        expect(required.get(mod), `${mod} (${name}) is not pinned in go.mod`).toMatch(/^v\d+\.\d+\.\d+$/)
        expect(mainGo, `${mod} is not imported by main.go`).toContain(`"${mod}`)
      }
    expect(required.get('github.com/caddyserver/caddy/v2')).toMatch(/^v2\.\d+\.\d+$/)
    // The image and the test build refuse a binary without a module of the one list.
    const check = all(build, 'RUN').find((r) => r.args.includes('list-modules'))!.args
    expect(check).toContain('required-modules.txt')
    expect(readFileSync(join(REPO_ROOT, 'scripts/build-edge.sh'), 'utf8')).toContain('deploy/proxy/caddy/required-modules.txt')
    const requiredList = read('proxy/caddy/required-modules.txt')
    for (const id of [
      'crowdsec',
      'http.handlers.crowdsec',
      'http.handlers.appsec',
      'http.handlers.waf',
      'http.handlers.rate_limit',
      'dns.providers.cloudflare',
      'dns.providers.route53',
      'dns.providers.rfc2136',
      'layer4.handlers.proxy',
      'layer4.handlers.panel_refuse',
      'admin.api.panel_dns_check',
      'http.matchers.panel_geo_refused',
      'caddy.storage.panel_redis',
      'admin.api.panel_storage',
    ])
      expect(requiredList.split('\n')).toContain(id)
  })

  it('runs unprivileged on the bootstrap config, whose admin API is for the internal network only', () => {
    expect(runtime.from).toMatch(/^caddy:/)
    expect(last(runtime, 'USER')!.args).toBe('1000:1000')
    expect(JSON.parse(last(runtime, 'CMD')!.args)).toEqual(['caddy', 'run', '--config', '/etc/caddy/bootstrap.json'])
    const bootstrap = JSON.parse(read('proxy/bootstrap.json'))
    // No address in the file: CADDY_ADMIN, loopback unless compose sets the control-network address.
    expect(bootstrap.admin.listen).toBeUndefined()
    expect(
      all(runtime, 'ENV')
        .map((e) => e.args)
        .join(' '),
    ).toMatch(/\bCADDY_ADMIN=127\.0\.0\.1:2019\b/)
    expect(bootstrap.apps).toBeUndefined()
    expect(bootstrap.storage.root).toBe('/var/lib/caddy')
    expect(
      all(runtime, 'EXPOSE')
        .map((e) => e.args)
        .join(' '),
    ).not.toMatch(/2019/)
  })
})

/** Compose's own substitution with the defaults: ${VAR:-default} -> default, ${VAR:?message} -> a stand-in. */
function withDefaults(text: string): string {
  return text.replace(/\$\{(\w+):-([^}]*)\}/g, '$2').replace(/\$\{(\w+):\?[^}]*\}/g, 'set-by-operator.example')
}

describe('deploy/crowdsec/console.yaml', () => {
  // The panel's alerts have no hub scenario hash: the engine classes them
  // custom (tests/integration/edge.sharing.test.ts shows they leave with the defaults).
  it('shares no custom, manual or tainted alert, and compose mounts it', () => {
    const console = parseYaml(read('crowdsec/console.yaml'))
    expect(console).toMatchObject({ share_custom: false, share_manual_decisions: false, share_tainted: false, share_context: false })
    expect(read('compose.yaml')).toContain('./crowdsec/console.yaml:/etc/crowdsec/console.yaml:ro')
  })
})

describe('deploy/compose.yaml', () => {
  const raw = parseYaml(read('compose.yaml')) as any
  const compose = parseYaml(withDefaults(read('compose.yaml'))) as any
  const services = compose.services as Record<string, any>
  const panel = services.panel
  const env = panel.environment as Record<string, string>
  const mounts = (svc: any) =>
    new Map<string, string>(
      (svc.volumes as string[]).map((v) => {
        const [src, dst] = v.split(':')
        return [dst!, src!]
      }),
    )

  it('parses, with the panel, the proxy, the engine and the init step', () => {
    expect(Object.keys(services).sort()).toEqual(['crowdsec', 'init', 'panel', 'proxy'])
    for (const name of ['panel', 'proxy', 'crowdsec'])
      expect(services[name].depends_on.init.condition).toBe('service_completed_successfully')
    const init = read('init/init.sh')
    for (const secret of ['master_key', 'bouncer_key', 'machine_password']) expect(init).toContain(secret)
    expect(spawnSync('sh', ['-n', join(DEPLOY, 'init/init.sh')]).status).toBe(0)
    // The engine's database exists before the engine's first start, so the chown gives it to the panel's user.
    expect(init.indexOf(': >/var/lib/crowdsec/data/crowdsec.db')).toBeGreaterThan(-1)
    expect(init.indexOf(': >/var/lib/crowdsec/data/crowdsec.db')).toBeLessThan(init.indexOf('chown -R 1000:1000'))
    expect(services.init.volumes).toContain('./init/init.sh:/init/init.sh:ro')
  })

  it('uses only declared volumes and bind mounts of files that exist', () => {
    const declared = new Set(Object.keys(compose.volumes))
    const used = new Set<string>()
    for (const [name, svc] of Object.entries(services)) {
      for (const v of svc.volumes ?? []) {
        const src = v.split(':')[0]
        if (src.startsWith('.')) expect(existsSync(join(DEPLOY, src)), `${name}: ${src}`).toBe(true)
        else {
          expect(declared.has(src), `${name} mounts the undeclared volume ${src}`).toBe(true)
          used.add(src)
        }
      }
    }
    expect([...declared].filter((v) => !used.has(v))).toEqual([])
    for (const svc of ['panel', 'proxy'])
      expect(existsSync(join(DEPLOY, services[svc].build.context, services[svc].build.dockerfile ?? 'Dockerfile'))).toBe(true)
  })

  it('names every environment variable the panel reads (derived from config.ts)', () => {
    const { names, aliases } = panelVariables()
    expect(names.length).toBeGreaterThan(20)
    const missing = names.filter((n) => !(n in env) && !(`${n}_FILE` in env) && !(aliases.has(n) && aliases.get(n)! in env))
    expect(missing, `add these to services.panel.environment in deploy/compose.yaml: ${missing.join(', ')}`).toEqual([])
    // Operator choices stay ${...} so that .env can set them.
    expect(raw.services.panel.environment.PANEL_DOMAIN).toMatch(/^\$\{PANEL_DOMAIN:\?/)
    const unknown = Object.keys(env).filter((k) => !names.includes(k) && !names.includes(k.replace(/_FILE$/, '')) && k !== 'TZ')
    expect(unknown, 'variables config.ts does not read').toEqual([])
    expect(env.HOST).toBe('0.0.0.0')
    expect(env.PROXY_MODULES.split(',').sort()).toEqual([...PROXY_MODULE_NAMES].sort())
  })

  it('keeps secrets out of the file: generated ones come from the init volume', () => {
    const panelMounts = mounts(panel)
    for (const k of Object.keys(env).filter((k) => k.endsWith('_FILE'))) {
      const dir = env[k]!.replace(/\/[^/]+$/, '')
      expect(panelMounts.get(dir), `${k} points into a mounted volume`).toBe('panel-secrets')
    }
    for (const k of ['PANEL_MASTER_KEY', 'LAPI_BOUNCER_KEY', 'LAPI_MACHINE_PASSWORD']) expect(env[k]).toBeUndefined()
    expect(services.crowdsec.entrypoint.join(' ')).toMatch(
      /BOUNCER_KEY_panel="\$\$\(cat \/run\/panel-secrets\/bouncer_key\)"[\s\S]*AGENT_PASSWORD="\$\$\(cat \/run\/panel-secrets\/machine_password\)"/,
    )
    expect(env.LAPI_MACHINE_ID).toBe('panel')
  })

  it("publishes no admin API: only the proxy's 80/443 and the panel on the host loopback", () => {
    const published = Object.entries(services).flatMap(([name, svc]) => (svc.ports ?? []).map((p: string) => `${name} ${p}`))
    expect(published.filter((p) => /2019|8080|7422/.test(p))).toEqual([])
    expect(services.crowdsec.ports).toBeUndefined()
    for (const p of panel.ports) expect(p).toMatch(/^127\.0\.0\.1:/)
    expect(new URL(env.LAPI_URL!).hostname).toBe('crowdsec')
  })

  it("keeps the admin API on the proxy's fixed address of the control network, which upstream services never join", () => {
    const proxy = services.proxy
    const controlIp = proxy.networks.control.ipv4_address
    expect(controlIp).toMatch(/^\d+\.\d+\.\d+\.\d+$/)
    const subnet = compose.networks.control.ipam.config[0].subnet as string
    expect(controlIp.split('.').slice(0, 3).join('.')).toBe(subnet.split('/')[0]!.split('.').slice(0, 3).join('.'))
    // The panel pushes admin.listen = host:port of PROXY_ADMIN_URL; the bootstrap config uses CADDY_ADMIN.
    expect(new URL(env.PROXY_ADMIN_URL!).host).toBe(`${controlIp}:2019`)
    expect(proxy.environment.CADDY_ADMIN).toBe(`${controlIp}:2019`)
    // Browsers reach the panel through the proxy (deployment step 5): the panel believes its X-Forwarded-For,
    // else every visitor looks like the proxy to the login throttle (issue 33). .env may add a CDN's ranges.
    expect(env.PANEL_TRUSTED_PROXIES!.split(',').filter(Boolean)).toEqual([controlIp])
    expect(raw.services.panel.environment.PANEL_TRUSTED_PROXIES).toMatch(/\$\{PANEL_TRUSTED_PROXIES:-\}$/)
    expect(JSON.parse(read('proxy/bootstrap.json')).admin.listen).toBeUndefined()
    // Only the proxy is on the upstreams' network; the control plane is not.
    expect(Object.keys(proxy.networks).sort()).toEqual(['apps', 'control'])
    for (const name of ['panel', 'crowdsec']) expect(services[name].networks).toEqual(['control'])
    expect(compose.networks.apps.name).toBe('edge-apps')
  })

  it("shares each folder at the same path in the panel and the proxy (the pushed config names the panel's paths)", () => {
    const panelMounts = mounts(panel),
      proxyMounts = mounts(services.proxy),
      engineMounts = mounts(services.crowdsec)
    for (const k of ['PROXY_LOG_DIR', 'PROXY_DATA_DIR']) {
      const path = env[k]!
      expect(proxyMounts.get(path), `${k}=${path} in the proxy`).toBeDefined()
      expect(panelMounts.get(path), `${k}=${path} in the panel`).toBe(proxyMounts.get(path))
    }
    // Uploaded certificates travel in the pushed configuration (load_pem): the proxy mounts no certificates folder.
    expect(env.PROXY_CERTS_DIR).toBeUndefined()
    expect(proxyMounts.get(env.PANEL_CERTS_DIR!)).toBeUndefined()
    for (const k of ['CROWDSEC_CONFIG_DIR', 'CROWDSEC_DATA_DIR']) expect(panelMounts.get(env[k]!)).toBe(engineMounts.get(env[k]!))
    expect(env.CROWDSEC_HUB_DIR!.startsWith(`${env.CROWDSEC_CONFIG_DIR!}/`)).toBe(true)
    // The proxy's own storage is only read by the panel.
    expect(panel.volumes).toContain(`${panelMounts.get(env.PROXY_DATA_DIR!)}:${env.PROXY_DATA_DIR}:ro`)
    expect(JSON.parse(read('proxy/bootstrap.json')).storage.root).toBe(env.PROXY_DATA_DIR)
  })

  it("has the engine read the proxy's access log and the WAF's audit log from the shared log volume", () => {
    const docs = read('crowdsec/acquis.yaml')
      .split(/^---$/m)
      .map((d) => parseYaml(d))
      .filter((d: any) => d.filenames)
    const files = docs.flatMap((d: any) => d.filenames as string[])
    expect(files).toEqual([`${env.PROXY_LOG_DIR}/access.log`, `${env.PROXY_LOG_DIR}/waf-audit.log`])
    expect(docs[0].labels.type).toBe('caddy')
    expect(mounts(services.crowdsec).get(env.PROXY_LOG_DIR!)).toBe(mounts(panel).get(env.PROXY_LOG_DIR!))
    expect(services.crowdsec.environment.COLLECTIONS).toContain('crowdsecurity/caddy')
    // The WAF log's parser and scenario are mounted; true_detect_mode's profile knows the scenario's name.
    expect(docs[1].labels.type).toBe('coraza-audit')
    expect(parseYaml(read('crowdsec/parsers/s01-parse/panel-coraza-audit.yaml')).filter).toContain("'coraza-audit'")
    expect(parseYaml(read('crowdsec/scenarios/panel-coraza-waf-blocks.yaml')).name).toBe(WAF_AUDIT_SCENARIO)
    const engine = mounts(services.crowdsec)
    expect(engine.get('/etc/crowdsec/parsers/s01-parse/panel-coraza-audit.yaml')).toBe(
      './crowdsec/parsers/s01-parse/panel-coraza-audit.yaml',
    )
    expect(engine.get('/etc/crowdsec/scenarios/panel-coraza-waf-blocks.yaml')).toBe('./crowdsec/scenarios/panel-coraza-waf-blocks.yaml')
  })

  it("runs the project's AppSec configuration where the panel points the proxy's bouncer (LAPI_APPSEC_URL)", () => {
    const appsec = read('crowdsec/acquis.yaml')
      .split(/^---$/m)
      .map((d) => parseYaml(d))
      .find((d: any) => d.source === 'appsec')
    expect(appsec).toMatchObject({ appsec_config: 'panel/appsec', labels: { type: 'appsec' } })
    const url = new URL(env.LAPI_APPSEC_URL!)
    expect(url.hostname).toBe('crowdsec')
    expect(appsec.listen_addr).toBe(`0.0.0.0:${url.port}`)
    // The configuration and every rule it names are mounted where the engine's hub finds local items.
    const engine = mounts(services.crowdsec)
    const config = parseYaml(read('crowdsec/appsec-configs/panel-appsec.yaml'))
    expect(config.name).toBe('panel/appsec')
    expect(engine.get('/etc/crowdsec/appsec-configs/panel-appsec.yaml')).toBe('./crowdsec/appsec-configs/panel-appsec.yaml')
    const ruleNames = new Map<string, string>()
    for (const [dst, src] of engine)
      if (dst.startsWith('/etc/crowdsec/appsec-rules/')) ruleNames.set(parseYaml(read(src.replace(/^\.\//, ''))).name, dst)
    expect([...ruleNames.keys()].sort()).toEqual([...config.inband_rules].sort())
    // The threshold rule reads the header the proxy sets and the file the panel writes.
    const threshold = read('crowdsec/appsec-rules/panel-appsec-threshold.yaml')
    expect(threshold).toContain(`REQUEST_HEADERS:${APPSEC_THRESHOLD_HEADER} `)
    expect(parseYaml(threshold).seclang_files_rules).toEqual([APPSEC_PLUGIN_FILE.join('/')])
    expect(mounts(panel).get(env.CROWDSEC_DATA_DIR!)).toBe(engine.get('/var/lib/crowdsec/data'))
  })

  describe("the engine keeps the panel's choices across its own restarts (the image's start script, v1.7.8)", () => {
    const engine = services.crowdsec
    const command = (engine.entrypoint as string[]).at(-1)!

    it('skips the hub upgrade at start (it would re-enable every scenario of an upgraded collection)', () => {
      // The start script compares the value case-insensitively with "true".
      expect(String(engine.environment.NO_HUB_UPGRADE).toLowerCase()).toBe('true')
      expect(raw.services.crowdsec.environment.NO_HUB_UPGRADE).toBe('true') // a string, not a YAML boolean
    })

    it("hands the panel's list of disabled scenarios to DISABLE_SCENARIOS, from the folder both containers mount", () => {
      const list = `${env.CROWDSEC_CONFIG_DIR}/${DISABLED_SCENARIOS_FILE}`
      expect(command).toContain(`DISABLE_SCENARIOS="$$(sed -e '/^#/d' ${list} 2>/dev/null`)
      expect(mounts(engine).get(env.CROWDSEC_CONFIG_DIR!)).toBe(mounts(panel).get(env.CROWDSEC_CONFIG_DIR!))
      expect(engine.environment.DISABLE_SCENARIOS).toBeUndefined() // set by the entrypoint only
      expect(command).toMatch(/&& exec \/bin\/bash \/docker_start\.sh$/)
    })

    // The entrypoint's own shell, run for real with sh (the image's /bin/sh is
    // busybox; this is the host's): compose's $$ unescaped, the container paths
    // pointed at a scratch folder, the image's start script replaced by a stub
    // that prints what it received.
    function runEntrypoint(listFile: string | null): { status: number | null; out: string; err: string } {
      const root = mkdtempSync(join(tmpdir(), 'entrypoint-'))
      mkdirSync(join(root, 'secrets'))
      mkdirSync(join(root, 'etc'))
      writeFileSync(join(root, 'secrets/bouncer_key'), 'k'.repeat(64))
      writeFileSync(join(root, 'secrets/machine_password'), 'p'.repeat(64))
      if (listFile !== null) writeFileSync(join(root, 'etc', DISABLED_SCENARIOS_FILE), listFile)
      writeFileSync(
        join(root, 'start.sh'),
        'printf "DISABLE_SCENARIOS=[%s]\\n" "$DISABLE_SCENARIOS"\nprintf "AGENT_USERNAME=%s\\n" "$AGENT_USERNAME"\n',
      )
      const script = command
        .replaceAll('$$', '$')
        .replaceAll('/run/panel-secrets/', `${root}/secrets/`)
        .replaceAll(`${env.CROWDSEC_CONFIG_DIR}/`, `${root}/etc/`)
        .replace('exec /bin/bash /docker_start.sh', `exec sh ${root}/start.sh`)
      const r = spawnSync('sh', ['-c', script], { encoding: 'utf8', env: { PATH: process.env.PATH } })
      return { status: r.status, out: r.stdout, err: r.stderr }
    }

    it('turns the file the panel writes into a space-separated list the start script loops over', () => {
      const r = runEntrypoint(renderDisabledScenariosFile(['crowdsecurity/http-probing', 'crowdsecurity/http-bad-user-agent']))
      expect(r.status, r.err).toBe(0)
      const value = /DISABLE_SCENARIOS=\[(.*)\]/.exec(r.out)![1]!
      expect(value.split(' ').filter(Boolean)).toEqual(['crowdsecurity/http-bad-user-agent', 'crowdsecurity/http-probing'])
      expect(value).not.toContain('#')
      expect(r.out).toContain('AGENT_USERNAME=panel')
    })

    it('starts the engine with nothing disabled when the panel has written no list yet', () => {
      const r = runEntrypoint(null)
      expect(r.status, r.err).toBe(0)
      expect(r.out).toContain('DISABLE_SCENARIOS=[]')
      const empty = runEntrypoint(renderDisabledScenariosFile([]))
      expect(/DISABLE_SCENARIOS=\[(.*)\]/.exec(empty.out)![1]!.trim()).toBe('')
    })
  })

  it('passes `docker compose config` when a container client is installed (none on the project machines)', () => {
    const probe = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' })
    if (probe.error || probe.status !== 0) return // checked by the structure tests above instead
    const r = spawnSync('docker', ['compose', '-f', join(DEPLOY, 'compose.yaml'), 'config', '--quiet'], {
      encoding: 'utf8',
      env: { ...process.env, PANEL_DOMAIN: 'panel.example.com' },
    })
    expect(r.status, r.stderr).toBe(0)
  })
})
