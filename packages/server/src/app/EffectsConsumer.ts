/**
 * The one `bosun-effects` consumer (docs/interface.md: What the service does 9, Events 4-5): every
 * outbound provider call decided outside a run's publish step arrives as an outbox row on this
 * queue, and its kind names its handler in the `EffectHandlers` registry (filled by `outbound/`
 * and the reviews feature, see `app/OutboxWorkers.ts`). Each handler makes its call once (`EffectOnce`). A
 * failed call fails the message, which the queue retries and after five deliveries moves to
 * `bosun-effects-dlq` with the provider's error, for `bosun queues dead-letters list|replay`; every
 * failed call counts in `bosun_outbound_effect_failures_total`. A row of a kind with no handler
 * fails the same way rather than being marked done unread.
 */
import { Cause, Effect, Layer, Metric, Option } from "effect"
import { Migrator } from "../platform/db/Migrator.ts"
import { outboundEffectFailures, providerOfKind } from "../platform/observability/Metrics.ts"
import { Outbox } from "../platform/storage/Outbox.ts"
import { EffectHandlers } from "../platform/storage/OutboxHandlers.ts"
import { MAX_DELIVERIES, Queues } from "../platform/storage/Queue.ts"

export const EffectsConsumerLive = Layer.effectDiscard(
  Effect.gen(function* () {
    const queues = yield* Queues
    const outbox = yield* Outbox
    const migrator = yield* Migrator
    const handlers = yield* EffectHandlers
    yield* migrator.awaitReady.pipe(
      Effect.andThen(
        queues.consume("bosun-effects", (message) =>
          outbox.handle(message, (row) => {
            const call: Effect.Effect<void, { readonly message: string }> = Option.match(handlers.find(row.kind), {
              onNone: () => Effect.die(new Error(`bosun-effects has no handler for kind ${row.kind}`)),
              onSome: (handler) =>
                handler.handle(row.payload, {
                  deliveries: message.deliveries,
                  last: message.deliveries >= MAX_DELIVERIES
                })
            })
            return call.pipe(
              Effect.onError((cause) =>
                Cause.hasInterruptsOnly(cause)
                  ? Effect.void
                  : Metric.update(
                      Metric.withAttributes(outboundEffectFailures, {
                        provider: providerOfKind(row.kind),
                        kind: row.kind
                      }),
                      1
                    )
              )
            )
          })
        )
      ),
      Effect.forkScoped
    )
  })
)
