import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto'
import { isoCBOR } from '@simplewebauthn/server/helpers'

// A WebAuthn authenticator in the test process (ES256, "none" attestation), for the
// API-level negative cases that a browser will not produce: a response signed for
// another origin, an old challenge answered with a fresh signature, another account's
// key. It builds the same bytes an authenticator does (WebAuthn §6.1, §6.5); the
// panel checks them with its real library. The browser suite uses Chromium's own
// virtual authenticator for the normal flows.

const _b64u = (b: Uint8Array | Buffer) => Buffer.from(b).toString('base64url')
const _sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest()

const FLAG_UP = 0x01
const FLAG_UV = 0x04
const FLAG_AT = 0x40

export interface SoftCredential {
  id: string
  privateKey: KeyObject
  cose: Uint8Array
  userHandle: string
  counter: number
}

export class SoftAuthenticator {
  constructor(
    readonly rpId: string,
    readonly origin: string,
  ) {}

  private _authData(flags: number, counter: number, attested?: Buffer): Buffer {
    const count = Buffer.alloc(4)
    count.writeUInt32BE(counter)
    return Buffer.concat([_sha256(this.rpId), Buffer.from([flags]), count, ...(attested ? [attested] : [])])
  }

  private _clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string, origin: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }))
  }

  /** navigator.credentials.create(): a new key for `options` (the panel's creation options). */
  create(
    options: { challenge: string; user: { id: string } },
    o: { origin?: string; userVerified?: boolean } = {},
  ): { credential: SoftCredential; response: any } {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const jwk = publicKey.export({ format: 'jwk' })
    const cose = isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    )
    const credId = randomBytes(16)
    const idLen = Buffer.alloc(2)
    idLen.writeUInt16BE(credId.length)
    const attested = Buffer.concat([Buffer.alloc(16), idLen, credId, Buffer.from(cose)])
    const flags = FLAG_UP | FLAG_AT | (o.userVerified === false ? 0 : FLAG_UV)
    const authData = this._authData(flags, 0, attested)
    const attestationObject = isoCBOR.encode(
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]) as any,
    )
    const clientDataJSON = this._clientData('webauthn.create', options.challenge, o.origin ?? this.origin)
    const id = _b64u(credId)
    return {
      credential: { id, privateKey, cose, userHandle: options.user.id, counter: 0 },
      response: {
        id,
        rawId: id,
        type: 'public-key',
        clientExtensionResults: {},
        response: { clientDataJSON: _b64u(clientDataJSON), attestationObject: _b64u(attestationObject), transports: ['internal'] },
      },
    }
  }

  /** navigator.credentials.get() with `credential`, answering `challenge`; the counter moves on at each call. */
  get(credential: SoftCredential, challenge: string, o: { origin?: string; userVerified?: boolean } = {}): any {
    credential.counter += 1
    const authData = this._authData(FLAG_UP | (o.userVerified === false ? 0 : FLAG_UV), credential.counter)
    const clientDataJSON = this._clientData('webauthn.get', challenge, o.origin ?? this.origin)
    const signature = sign('sha256', Buffer.concat([authData, _sha256(clientDataJSON)]), credential.privateKey)
    return {
      id: credential.id,
      rawId: credential.id,
      type: 'public-key',
      clientExtensionResults: {},
      response: {
        clientDataJSON: _b64u(clientDataJSON),
        authenticatorData: _b64u(authData),
        signature: _b64u(signature),
        userHandle: credential.userHandle,
      },
    }
  }
}
