/**
 * The one pipeline by which the GitHub, Slack and Linear inbox handlers apply a delivery exactly
 * once (docs/interface.md: Events 3-4): the wake-up names the delivery; it is locked, applied and
 * marked processed (or ignored, with why) in one transaction, so a redelivered wake-up or a crash
 * in between applies nothing twice. Deliveries about one subject are applied in arrival order,
 * whatever order their wake-ups are handled in: the transaction serializes on the subject and
 * first applies the subject's earlier deliveries still pending (their own wake-ups then find them
 * processed); an earlier one that fails is left to its own wake-up, so it cannot hold up the
 * subject for good. Outbox rows the work writes are sent once it commits, and the Scheduler is
 * woken after it when a handler asks for it. A failure of the delivery the wake-up names fails
 * the message, which the queue retries and finally dead-letters. What a delivery does is its
 * source's handler's.
 */
import { Cause, Effect, Exit, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Outbox } from "../platform/storage/Outbox.ts"
import { outboxHandler } from "../platform/storage/OutboxHandlers.ts"
import type { WebhookDeliveriesShape, WebhookDelivery } from "./WebhookDeliveries.ts"

/** A `bosun-inbox` row of a delivery: which one to apply. */
export const DeliveryPointer = Schema.Struct({ organization_id: Schema.String, delivery_id: Schema.String })

/**
 * What applying a delivery came to: why it was ignored (null when it was acted on), and whether
 * the Scheduler is to be woken once the transaction committed (before, it would not see the rows
 * the work wrote): GitHub's steps ask for it when they queued or cancelled a run.
 */
export interface DeliveryOutcome {
  readonly ignoredReason: string | null
  readonly wakeScheduler: boolean
}

/** An outcome that wakes the Scheduler whenever the delivery was acted on (Slack's and Linear's). */
export const actedOn = (ignoredReason: string | null): DeliveryOutcome => ({
  ignoredReason,
  wakeScheduler: ignoredReason === null
})

/**
 * Applies the delivery `pointer` names, once, for `deliveries`: `apply` does its work in the
 * transaction; `wake` runs after the commit when some delivery applied asks for the Scheduler.
 * Logs `{name}_delivery_processed` for each delivery applied.
 */
export const makeDeliveryProcessor = (
  name: string,
  deliveries: Omit<WebhookDeliveriesShape, "record">,
  apply: (delivery: WebhookDelivery) => Effect.Effect<DeliveryOutcome>,
  wake: Effect.Effect<void> = Effect.void
) =>
  Effect.gen(function* () {
    const outbox = yield* Outbox
    const sql = yield* SqlClient.SqlClient

    /** Applies and marks one delivery; answers whether the Scheduler is to be woken. */
    const applyOne = (delivery: WebhookDelivery, before: string | null) =>
      Effect.gen(function* () {
        const outcome = yield* apply(delivery)
        yield* deliveries.markProcessed(delivery.organizationId, delivery.deliveryId, outcome.ignoredReason)
        yield* Effect.logInfo(`${name}_delivery_processed`).pipe(
          Effect.annotateLogs({
            org_id: delivery.organizationId,
            delivery_id: delivery.deliveryId,
            event: delivery.event,
            action: delivery.action,
            ignored_reason: outcome.ignoredReason,
            ...(before === null ? {} : { applied_before: before })
          })
        )
        return outcome.wakeScheduler
      })

    /**
     * An earlier delivery of the subject, on a savepoint: one that fails is rolled back and left
     * pending for its own wake-up to retry (and finally dead-letter), so a delivery that keeps
     * failing does not hold up the subject's later ones for good.
     */
    const applyEarlier = (delivery: WebhookDelivery, before: string) =>
      Effect.gen(function* () {
        const applied = yield* Effect.exit(sql.withTransaction(applyOne(delivery, before)))
        if (Exit.isSuccess(applied)) return applied.value
        if (Cause.hasInterruptsOnly(applied.cause)) return yield* Effect.failCause(applied.cause)
        yield* Effect.logWarning(`${name}_delivery_deferred`).pipe(
          Effect.annotateLogs({
            org_id: delivery.organizationId,
            delivery_id: delivery.deliveryId,
            event: delivery.event,
            action: delivery.action,
            applied_after: before,
            error: messageOf(Cause.squash(applied.cause))
          })
        )
        return false
      })

    return Effect.fn(`${name}.handle`)(function* (pointer: typeof DeliveryPointer.Type) {
      const wakeAfterCommit = yield* outbox
        .transaction(
          Effect.gen(function* () {
            yield* deliveries.serialize(pointer.organization_id, pointer.delivery_id)
            const found = yield* deliveries.lock(pointer.organization_id, pointer.delivery_id)
            if (found._tag === "None" || found.value.processedAt !== null) return false
            let wakeScheduler = false
            for (const delivery of yield* deliveries.lockPendingBefore(found.value)) {
              wakeScheduler = (yield* applyEarlier(delivery, pointer.delivery_id)) || wakeScheduler
            }
            return (yield* applyOne(found.value, null)) || wakeScheduler
          })
        )
        .pipe(Effect.orDie)
      if (wakeAfterCommit) yield* wake
    })
  })

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** The inbox handler of rows of `kind`, whose payload is a `DeliveryPointer`. */
export const processDeliveryOnce = (
  kind: string,
  name: string,
  deliveries: WebhookDeliveriesShape,
  apply: (delivery: WebhookDelivery) => Effect.Effect<DeliveryOutcome>,
  wake: Effect.Effect<void> = Effect.void
) =>
  Effect.map(makeDeliveryProcessor(name, deliveries, apply, wake), (handle) =>
    outboxHandler(kind, DeliveryPointer, handle)
  )
