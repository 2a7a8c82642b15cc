/**
 * How every `bosun-effects` handler makes a provider call exactly once (docs/interface.md: What the
 * service does 9, Events 4):
 *
 * - The effect is recorded PENDING in `provider_effects` under its idempotency key before the
 *   call, and the call is made with that row locked, so two handlers of one effect (a redelivered
 *   wake-up, a report made twice) make it once between them. A SUCCEEDED row is not called again.
 * - The call itself must reconcile a PENDING effect that may already have been made (a crash or a
 *   timeout after the provider acted): it is told whether an earlier call was attempted, and then
 *   looks first (GitHub by a marker, Slack by message metadata, Linear by the comment id) and only
 *   then makes it. A first call need not look: nothing can have been made yet.
 * - A provider that answers 429 with `Retry-After` is waited out and called again within the same
 *   delivery, up to `RATE_LIMIT_WAITS` times and `MAX_RETRY_AFTER` a wait; a longer or further
 *   limit fails the delivery like any other failure (the queue retries it, and after five failed
 *   deliveries dead-letters it to `bosun-effects-dlq` with the provider's error).
 */
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { OutboxDelivery } from "../../platform/storage/OutboxHandlers.ts"
import { ProviderEffectsRepo } from "./ProviderEffectsRepo.ts"

/** Rate limits waited out within one delivery before it fails as a whole. */
export const RATE_LIMIT_WAITS = 5
/** The longest `Retry-After` waited out within a delivery; longer ones fail it for the queue to retry. */
export const MAX_RETRY_AFTER = Duration.seconds(60)

/** Which delivery of its `bosun-effects` message a handler runs in. */
export type EffectDelivery = OutboxDelivery

/** What a provider call's failure may say: its message, and when rate limited, how long to wait. */
export interface CallFailure {
  readonly message: string
  readonly retryAfter?: Duration.Duration | undefined
}

export interface EffectCall<E extends CallFailure> {
  readonly organizationId: string
  readonly kind: string
  readonly key: string
  /** What the effect records before the call: everything the call needs, no secret. */
  readonly request: Readonly<Record<string, unknown>>
  /**
   * Makes (or, when `attempted`, first looks for) the effect; answers what the provider returned,
   * recorded as the result.
   */
  readonly call: (previous: { readonly attempted: boolean }) => Effect.Effect<Readonly<Record<string, unknown>>, E>
}

export const makeEffectOnce = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const effects = yield* ProviderEffectsRepo

  const attempt = <E extends CallFailure>(effect: EffectCall<E>) =>
    sql
      .withTransaction(
        Effect.gen(function* () {
          const recorded = yield* effects.lock(effect.organizationId, effect.key)
          if (recorded._tag === "Some" && recorded.value.status === "SUCCEEDED") return
          const attempted = recorded._tag === "Some" && recorded.value.attempts > 0
          yield* effects.attempted(effect.organizationId, effect.key)
          yield* effects.succeed(effect.organizationId, effect.key, yield* effect.call({ attempted }))
        })
      )
      .pipe(
        // The transaction's own count rolled back with it: the failed call is counted after.
        Effect.tapError((error) => effects.failedAttempt(effect.organizationId, effect.key, error.message))
      )

  return <E extends CallFailure>(effect: EffectCall<E>) =>
    Effect.gen(function* () {
      yield* effects.begin({
        organizationId: effect.organizationId,
        runId: null,
        kind: effect.kind,
        idempotencyKey: effect.key,
        request: effect.request
      })

      let waits = 0
      while (true) {
        const outcome = yield* Effect.result(attempt(effect))
        if (outcome._tag === "Success") return
        const error = outcome.failure
        const retryAfter = "retryAfter" in error ? error.retryAfter : undefined
        if (
          retryAfter === undefined ||
          waits >= RATE_LIMIT_WAITS ||
          Duration.isGreaterThan(retryAfter, MAX_RETRY_AFTER)
        ) {
          return yield* Effect.fail(error)
        }
        waits++
        yield* Effect.logInfo("provider_rate_limited").pipe(
          Effect.annotateLogs({ kind: effect.kind, wait_ms: Duration.toMillis(retryAfter), waits })
        )
        yield* Effect.sleep(retryAfter)
      }
    }).pipe(Effect.withSpan("ProviderEffect.once", { attributes: { kind: effect.kind } }))
})
