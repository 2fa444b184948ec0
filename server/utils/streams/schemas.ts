import { z } from 'zod'
import { safeText } from '../core/validate'
import { hostnameSchema } from '../hosts/schemas'

// Request shapes of streams (docs/streams.md): TCP and UDP forwarding through the
// proxy's layer-4 app. Cross-row checks (a port another listener holds, a name
// that is also a web host, a target group or access list that does not exist)
// are the domain's (streams/streams.ts); this file checks one body on its own.

/** A typo in a range must not make the proxy open tens of thousands of listeners. */
export const STREAM_MAX_RANGE_PORTS = 1000

export const STREAM_PROTOCOLS = ['tcp', 'udp'] as const
export const STREAM_RANGE_MAPPINGS = ['one_to_one', 'all_to_one'] as const
export const STREAM_PROXY_PROTOCOLS = ['off', 'v1', 'v2'] as const

const _port = z.number().int('must be an integer').min(1, 'must be between 1 and 65535').max(65535, 'must be between 1 and 65535')

/** Left out of a PUT: the stored value stays; on create: the default (docs/streams.md). */
export const streamBody = z
  .strictObject({
    name: safeText(100).trim().min(1, 'must not be empty'),
    enabled: z.boolean({ message: 'must be true or false' }).optional(),
    protocol: z.enum(STREAM_PROTOCOLS, { message: 'must be "tcp" or "udp"' }),
    listen_port: _port,
    listen_port_end: _port.nullable().optional(),
    range_mapping: z
      .enum(STREAM_RANGE_MAPPINGS, {
        message: 'must be "one_to_one" (each port to the target port plus its offset) or "all_to_one" (every port to the target port)',
      })
      .optional(),
    target_group_id: z.number().int('must be a target group id').positive('must be a target group id'),
    tls_sni: z.array(hostnameSchema).max(50, 'at most 50 names').optional(),
    proxy_protocol: z.enum(STREAM_PROXY_PROTOCOLS, { message: 'must be "off", "v1" or "v2"' }).optional(),
    accept_proxy_protocol: z.boolean({ message: 'must be true or false' }).optional(),
    lan_only: z.boolean({ message: 'must be true or false' }).optional(),
    access_list_id: z.number().int().positive('must be an access list id').nullable().optional(),
    bouncer_enabled: z.boolean({ message: 'must be true or false' }).optional(),
    engine_down_refuse: z.boolean({ message: 'must be true or false' }).optional(),
    udp_probe_hex: z
      .string()
      .regex(/^(?:[0-9a-fA-F]{2}){1,512}$/, 'must be the probe datagram as hex bytes (2 to 1024 hex digits), or null for no probe')
      .transform((s) => s.toLowerCase())
      .nullable()
      .optional(),
  })
  .superRefine((b, ctx) => {
    const end = b.listen_port_end
    if (end != null && end <= b.listen_port) {
      ctx.addIssue({ code: 'custom', path: ['listen_port_end'], message: 'must be greater than listen_port (the range is inclusive)' })
    }
    if (end != null && end - b.listen_port + 1 > STREAM_MAX_RANGE_PORTS) {
      ctx.addIssue({ code: 'custom', path: ['listen_port_end'], message: `a range holds at most ${STREAM_MAX_RANGE_PORTS} ports` })
    }
    if (b.protocol === 'udp' && b.tls_sni?.length) {
      ctx.addIssue({ code: 'custom', path: ['tls_sni'], message: 'SNI routing reads a TLS ClientHello: only for "tcp" streams' })
    }
    if (b.protocol === 'tcp' && b.udp_probe_hex != null) {
      ctx.addIssue({ code: 'custom', path: ['udp_probe_hex'], message: 'only for "udp" streams (a TCP target is checked by connecting)' })
    }
    if (b.tls_sni?.length && end != null) {
      ctx.addIssue({ code: 'custom', path: ['tls_sni'], message: 'SNI routing is for one port, not a range' })
    }
  })
export type StreamInput = z.infer<typeof streamBody>

/** A stored stream with every field present: what the builder and the answers see. */
export const streamRecord = z.strictObject({
  id: z.number().int(),
  name: z.string(),
  enabled: z.boolean(),
  protocol: z.enum(STREAM_PROTOCOLS),
  listen_port: z.number().int(),
  listen_port_end: z.number().int().nullable(),
  range_mapping: z.enum(STREAM_RANGE_MAPPINGS),
  target_group_id: z.number().int(),
  tls_sni: z.array(z.string()),
  proxy_protocol: z.enum(STREAM_PROXY_PROTOCOLS),
  accept_proxy_protocol: z.boolean(),
  lan_only: z.boolean(),
  access_list_id: z.number().int().nullable(),
  bouncer_enabled: z.boolean(),
  engine_down_refuse: z.boolean(),
  udp_probe_hex: z.string().nullable(),
})
export type Stream = z.output<typeof streamRecord>

/** What a create fills in for a field the body left out. */
export const STREAM_DEFAULTS = {
  enabled: true,
  listen_port_end: null,
  range_mapping: 'one_to_one',
  tls_sni: [],
  proxy_protocol: 'off',
  accept_proxy_protocol: false,
  lan_only: false,
  access_list_id: null,
  bouncer_enabled: true,
  engine_down_refuse: false,
  udp_probe_hex: null,
} as const satisfies Partial<Stream>
