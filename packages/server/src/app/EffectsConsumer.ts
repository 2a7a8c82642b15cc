/**
 * The one `bosun-effects` consumer (docs/interface.md: What the service does 9, Events 4-5): every
 * outbound provider call decided outside a run's publish step arrives as an outbox row on this
 * queue, and its kind names the handler — GitHub (`outbound/github/GithubEffects.ts`), reviews a
 * run decided (`features/reviews/ReviewDelivery.ts`), Slack (`outbound/slack/SlackEffects.ts`),
 * Linear (`outbound/linear/LinearEffects.ts`). Each handler makes its call once (`EffectOnce`). A
 * failed call fails the message, which the queue retries and after five deliveries moves to
 * `bosun-effects-dlq` with the provider's error, for `bosun queues dead-letters list|replay`; every
 * failed call counts in `bosun_outbound_effect_failures_total`. A row of a kind with no handler
 * fails the same way rather than being marked done unread.
 */
import { Cause, Effect, Layer, Metric } from "effect"
import { makeReviewDelivery } from "../features/reviews/ReviewDelivery.ts"
import type { EffectDelivery } from "../outbound/effects/EffectOnce.ts"
import { makeGithubEffectHandlers } from "../outbound/github/GithubEffects.ts"
import { makeLinearEffectHandlers } from "../outbound/linear/LinearEffects.ts"
import { makeSlackEffectHandlers } from "../outbound/slack/SlackEffects.ts"
import { Migrator } from "../platform/db/Migrator.ts"
import { outboundEffectFailures, providerOfKind } from "../platform/observability/Metrics.ts"
import { Outbox } from "../platform/storage/Outbox.ts"
import { MAX_DELIVERIES, Queues } from "../platform/storage/Queue.ts"

export const EffectsConsumerLive = Layer.effectDiscard(
  Effect.gen(function* () {
    const queues = yield* Queues
    const outbox = yield* Outbox
    const migrator = yield* Migrator
    const handlers = new Map<
      string,
      (payload: unknown, delivery: EffectDelivery) => Effect.Effect<void, { readonly message: string }>
    >([
      ...(yield* makeGithubEffectHandlers),
      ...(yield* makeReviewDelivery),
      ...(yield* makeSlackEffectHandlers),
      ...(yield* makeLinearEffectHandlers)
    ])
    yield* migrator.awaitReady.pipe(
      Effect.andThen(
        queues.consume("bosun-effects", (message) =>
          outbox.handle(message, (row) => {
            const handler = handlers.get(row.kind)
            const call =
              handler === undefined
                ? Effect.die(new Error(`bosun-effects has no handler for kind ${row.kind}`))
                : handler(row.payload, {
                    deliveries: message.deliveries,
                    last: message.deliveries >= MAX_DELIVERIES
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
