/**
 * The registries the two outbox consumers dispatch through: `InboxHandlers` for `bosun-inbox`
 * (webhook deliveries) and `EffectHandlers` for `bosun-effects` (provider calls). A feature adds
 * its handlers with `contribute`, each naming its row kind and the Schema of its payload; the
 * consumers import no feature. What a handler does, and how the consumers retry, is not here.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"

/** Which delivery of the row's wake-up this is. */
export interface OutboxDelivery {
  /** 1 on the first delivery. */
  readonly deliveries: number
  /** The queue dead-letters the message if this delivery fails. */
  readonly last: boolean
}

/** What a consumer calls for a row of `kind`; its failure fails the message, for the queue to retry. */
export interface OutboxHandler {
  readonly kind: string
  readonly handle: (payload: unknown, delivery: OutboxDelivery) => Effect.Effect<void, { readonly message: string }>
}

/**
 * A handler of `kind`, whose payload is decoded with `payload` first. A payload that does not
 * decode was written by a different version of Bosun or by hand: the message fails with the
 * decoder's words and is finally dead-lettered for an operator, never marked done unread.
 */
export const outboxHandler = <S extends Schema.Top & { readonly DecodingServices: never }>(
  kind: string,
  payload: S,
  handle: (decoded: S["Type"], delivery: OutboxDelivery) => Effect.Effect<void, { readonly message: string }>
): OutboxHandler => {
  const decode = Schema.decodeUnknownEffect(payload)
  return {
    kind,
    handle: (raw, delivery) =>
      decode(raw).pipe(
        Effect.mapError((error) => ({ message: `${kind}: the payload does not decode: ${error.message}` })),
        Effect.flatMap((decoded) => handle(decoded, delivery))
      )
  }
}

export interface HandlerRegistry {
  /** Adds handlers; a kind registered twice is a wiring mistake and stops the start. */
  readonly register: (handlers: ReadonlyArray<OutboxHandler>) => Effect.Effect<void>
  readonly find: (kind: string) => Option.Option<OutboxHandler>
}

const makeRegistry = (queue: string): HandlerRegistry => {
  const byKind = new Map<string, OutboxHandler>()
  return {
    register: (handlers) =>
      Effect.suspend(() => {
        for (const handler of handlers) {
          if (byKind.has(handler.kind)) {
            return Effect.die(new Error(`${queue}: two handlers registered for kind ${handler.kind}`))
          }
        }
        for (const handler of handlers) byKind.set(handler.kind, handler)
        return Effect.void
      }),
    find: (kind) => Option.fromUndefinedOr(byKind.get(kind))
  }
}

/** The handlers of `bosun-inbox` rows (webhook deliveries), by kind. */
export class InboxHandlers extends Context.Service<InboxHandlers, HandlerRegistry>()(
  "bosun/server/storage/OutboxHandlers/InboxHandlers"
) {
  static readonly layer = Layer.sync(InboxHandlers, () => makeRegistry("bosun-inbox"))
}

/** The handlers of `bosun-effects` rows (provider calls), by kind. */
export class EffectHandlers extends Context.Service<EffectHandlers, HandlerRegistry>()(
  "bosun/server/storage/OutboxHandlers/EffectHandlers"
) {
  static readonly layer = Layer.sync(EffectHandlers, () => makeRegistry("bosun-effects"))
}

/** A layer that adds the handlers `make` builds to `registry` when it is built. */
export const contribute = <Id, E, R>(
  registry: Context.Key<Id, HandlerRegistry>,
  make: Effect.Effect<ReadonlyArray<OutboxHandler>, E, R>
) => Layer.effectDiscard(Effect.flatMap(registry, (found) => Effect.flatMap(make, found.register)))
