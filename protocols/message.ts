import { z } from 'zod'
import { decode, encode } from './codec.ts'
import { DuplicateMessageTypeError, type ErrorPayload, UnknownTypeError, ValidationError } from './errors.ts'
import { checkVersion, PROTOCOL_VERSION } from './version.ts'

/**
 * The envelope every triad message travels in:
 * `v` the protocol version (`MAJOR.MINOR`), `type` a namespaced message type (`env.start`),
 * `payload` the type's body, validated against the type's schema at the receiving boundary.
 */
export interface Envelope<T extends string = string, P = unknown> {
  v: string
  type: T
  payload: P
}

const EnvelopeSchema = z.object({
  v: z.string(),
  type: z.string().min(1),
  payload: z.unknown(),
})

/**
 * One message type: its namespaced name and the zod schema of its payload.
 * Build with `defineMessage`; `make` builds an envelope with the current protocol version.
 */
export interface MessageDef<T extends string = string, S extends z.ZodType = z.ZodType> {
  readonly type: T
  readonly schema: S
  /** Wraps a payload in an envelope of this type (no validation: the receiver validates). */
  make(payload: z.input<S>): Envelope<T, z.input<S>>
}

/** The payload type of a message definition. */
export type PayloadOf<D> = D extends MessageDef<string, infer S> ? z.output<S> : never

/** Defines a message type. `type` is namespaced `area.verb`, for example `env.start`. */
export function defineMessage<T extends string, S extends z.ZodType>(type: T, schema: S): MessageDef<T, S> {
  return {
    type,
    schema,
    make: (payload) => ({ v: PROTOCOL_VERSION, type, payload }),
  }
}

/** Converts zod issues to `{path, message}` pairs with dotted paths. */
function issuesOf(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }))
}

/**
 * A read-only set of message definitions, keyed by `type`. Built once per process from the
 * definitions an actor accepts; `parse` is the boundary check of every incoming message.
 * @throws DuplicateMessageTypeError (constructor) when two definitions share a `type`.
 */
export class MessageRegistry {
  private readonly defs: ReadonlyMap<string, MessageDef>
  constructor(defs: readonly MessageDef[]) {
    const map = new Map<string, MessageDef>()
    for (const d of defs) {
      if (map.has(d.type)) throw new DuplicateMessageTypeError(d.type)
      map.set(d.type, d)
    }
    this.defs = map
  }

  /** Every registered type name, sorted. */
  types(): string[] {
    return [...this.defs.keys()].sort()
  }

  /** True when `type` is registered. */
  has(type: string): boolean {
    return this.defs.has(type)
  }

  /**
   * Validates a decoded value as an envelope of a registered type and returns it with its payload
   * parsed (defaults applied).
   * @throws ValidationError for a bad envelope or payload; VersionMismatchError for another major
   *   version; UnknownTypeError for a type not in this registry.
   */
  validate(value: unknown): Envelope {
    const env = EnvelopeSchema.safeParse(value)
    if (!env.success) throw new ValidationError(undefined, issuesOf(env.error))
    checkVersion(env.data.v)
    const def = this.defs.get(env.data.type)
    if (!def) throw new UnknownTypeError(env.data.type, this.types())
    const payload = def.schema.safeParse(env.data.payload)
    if (!payload.success) throw new ValidationError(env.data.type, issuesOf(payload.error))
    return { v: env.data.v, type: env.data.type, payload: payload.data }
  }

  /**
   * Decodes msgpack bytes and validates them (see `validate`).
   * @throws DecodeError for bytes that are not msgpack, and everything `validate` throws.
   */
  parse(bytes: Uint8Array): Envelope {
    return this.validate(decode(bytes))
  }
}

/** Encodes an envelope to msgpack bytes. */
export function encodeEnvelope(envelope: Envelope): Uint8Array {
  return encode(envelope)
}

/** The `error` reply: sent instead of a normal reply when a request fails. */
export const ErrorReply = defineMessage(
  'error',
  z.object({
    code: z.string(),
    message: z.string(),
    details: z.unknown().optional(),
  }),
)

/** Builds an `error` reply envelope. */
export function errorReply(payload: ErrorPayload): Envelope<'error', ErrorPayload> {
  return { v: PROTOCOL_VERSION, type: 'error', payload }
}
