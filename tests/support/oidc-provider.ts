import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { SignJWT, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose'
import Provider from 'oidc-provider'

// A real OpenID Provider (oidc-provider) in the test process on loopback, with
// one static confidential client and a non-interactive login: the account that
// logs in is whatever `nextAccount` names. For failure injection only, the
// token endpoint's id_token can be rewritten on its way out (tampered
// signature, other audience, other nonce, expired), re-signed with the
// provider's own key where the signature must stay valid. An account's group claims
// (`groups`, `roles`, `realm_access`) go into its id_token as they are set.

export interface TestAccount {
  email?: string
  email_verified?: boolean
  name?: string
  /** Group claims the id_token carries (OIDC groups to roles): `groups`, `roles` or `realm_access` ({roles: [...]}). */
  groups?: unknown
  roles?: unknown
  realm_access?: unknown
}
export type IdTokenTamper = 'none' | 'signature' | 'audience' | 'nonce' | 'expired'

export interface TestOidcProvider {
  issuer: string
  clientId: string
  clientSecret: string
  accounts: Map<string, TestAccount>
  /** The subject the next browser login authenticates as. */
  nextAccount: string
  tamper: IdTokenTamper
  /** Follows the redirects from the provider's authorization URL until the panel's redirect URI; returns that URL. */
  authorize(authorizationUrl: string): Promise<URL>
  stop(): Promise<void>
}

function _cookieJar() {
  const jar = new Map<string, string>()
  return {
    header: () => [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
    store(res: Response) {
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(';')
        const i = pair!.indexOf('=')
        const name = pair!.slice(0, i).trim()
        const value = pair!.slice(i + 1)
        if (/expires=Thu, 01 Jan 1970/i.test(c) || value === '') jar.delete(name)
        else jar.set(name, value)
      }
    },
  }
}

export async function startOidcProvider(opts: {
  redirectUri: string
  clientId?: string
  clientSecret?: string
}): Promise<TestOidcProvider> {
  const clientId = opts.clientId ?? 'panel'
  const clientSecret = opts.clientSecret ?? 'panel-oidc-client-secret-4f9a2c'
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const privateJwk: JWK = { ...(await exportJWK(privateKey)), kid: 'test-key-1', alg: 'RS256', use: 'sig' }
  const signingKey = await importJWK(privateJwk, 'RS256')

  const server: Server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  const handle: TestOidcProvider = {
    issuer,
    clientId,
    clientSecret,
    accounts: new Map(),
    nextAccount: 'alice',
    tamper: 'none',
    authorize: undefined as never,
    stop: undefined as never,
  }

  const provider = new Provider(issuer, {
    jwks: { keys: [privateJwk as any] },
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [opts.redirectUri],
        response_types: ['code'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    // The group claims ride on the openid scope, which every login asks for: the panel requests no extra scope.
    claims: { openid: ['sub', 'groups', 'roles', 'realm_access'], email: ['email', 'email_verified'], profile: ['name'] },
    conformIdTokenClaims: false,
    findAccount: async (_ctx: unknown, id: string) => ({
      accountId: id,
      claims: async () => {
        const a = handle.accounts.get(id) ?? {}
        return {
          sub: id,
          email: a.email,
          email_verified: a.email_verified,
          name: a.name,
          groups: a.groups,
          roles: a.roles,
          realm_access: a.realm_access,
        }
      },
    }),
    interactions: { url: (_ctx: unknown, i: { uid: string }) => `/interaction/${i.uid}` },
    cookies: { keys: ['test-cookie-key-0123456789'] },
    ttl: { AccessToken: 3600, AuthorizationCode: 60, IdToken: 3600, Grant: 3600, Interaction: 600, Session: 3600 },
  } as any)
  provider.on('server_error', (_ctx: unknown, err: Error) => {
    console.error('[oidc-provider]', err)
  })
  const callback = provider.callback()

  async function _interaction(req: IncomingMessage, res: ServerResponse) {
    const details = await provider.interactionDetails(req, res)
    if (details.prompt.name === 'login') {
      await provider.interactionFinished(req, res, { login: { accountId: handle.nextAccount } }, { mergeWithLastSubmission: false })
      return
    }
    const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id as string })
    const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] }
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '))
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims)
    await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true })
  }

  async function _rewriteIdToken(idToken: string): Promise<string> {
    const payload = decodeJwt(idToken)
    const header = decodeProtectedHeader(idToken)
    const resign = (claims: Record<string, unknown>) =>
      new SignJWT({ ...payload, ...claims }).setProtectedHeader({ alg: header.alg!, kid: header.kid, typ: header.typ }).sign(signingKey)
    const now = Math.floor(Date.now() / 1000)
    switch (handle.tamper) {
      case 'signature': {
        // Same signature over a changed payload: the signature no longer matches.
        const [h, , sig] = idToken.split('.')
        const forged = Buffer.from(JSON.stringify({ ...payload, email: 'mallory@example.test' })).toString('base64url')
        return `${h}.${forged}.${sig}`
      }
      case 'audience':
        return resign({ aud: 'another-client' })
      case 'nonce':
        return resign({ nonce: 'not-the-nonce-the-panel-sent' })
      case 'expired':
        return resign({ iat: now - 7200, exp: now - 3600 })
      default:
        return idToken
    }
  }

  server.on('request', (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!
    if (path.startsWith('/interaction/')) {
      _interaction(req, res).catch((err) => {
        res.statusCode = 500
        res.end(String(err))
      })
      return
    }
    if (req.method === 'POST' && path === '/token' && handle.tamper !== 'none') {
      // Failure injection: capture the provider's token response and rewrite its id_token.
      const end = res.end.bind(res) as (chunk?: any) => ServerResponse
      res.end = ((chunk?: any) => {
        const text = chunk ? Buffer.from(chunk).toString('utf8') : ''
        let json: any
        try {
          json = JSON.parse(text)
        } catch {
          return end(chunk)
        }
        if (typeof json?.id_token !== 'string') return end(chunk)
        _rewriteIdToken(json.id_token).then(
          (rewritten) => {
            const body = JSON.stringify({ ...json, id_token: rewritten })
            res.setHeader('content-length', Buffer.byteLength(body))
            end(body)
          },
          (err) => {
            res.statusCode = 500
            end(String(err))
          },
        )
        return res
      }) as any
    }
    callback(req, res)
  })

  handle.authorize = async (authorizationUrl: string) => {
    const jar = _cookieJar()
    let url = new URL(authorizationUrl)
    for (let hop = 0; hop < 15; hop++) {
      if (url.href.startsWith(opts.redirectUri)) return url
      if (url.origin !== issuer) throw new Error(`the authorization flow left the provider for ${url.origin}`)
      const res = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } })
      jar.store(res)
      const location = res.headers.get('location')
      if (!location) throw new Error(`the provider answered ${res.status} without a redirect: ${(await res.text()).slice(0, 300)}`)
      await res.arrayBuffer().catch(() => {})
      url = new URL(location, url)
    }
    throw new Error('too many redirects in the authorization flow')
  }

  handle.stop = async () => {
    server.closeAllConnections()
    await new Promise<void>((r) => server.close(() => r()))
  }
  return handle
}
