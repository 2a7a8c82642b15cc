/**
 * The one pipeline by which the GitHub, Slack and Linear inbox handlers apply a delivery exactly
 * once (docs/interface.md: Events 3-4): the wake-up names the delivery; it is locked, applied and
 * marked processed (or ignored, with why) in one transaction, so a redelivered wake-up or a crash
 * in between applies nothing twice. Deliveries about one subject are applied in arrival order,
 * whatever order their wake-ups are handled in: the transaction serializes on the subject and
 * first applies the subject's earlier deliveries still pending (their own wake-ups then find them
 * processed). Outbox rows the work writes are sent once it commits, and the Scheduler is woken
 * after it when the work queued or cancelled a run. A database failure fails the message, which
 * the queue retries and finally dead-letters. What a delivery does is its source's handler's.
 */
import { Effect, Schema } from "effect"
import { Outbox } from "../platform/storage/Outbox.ts"
import { outboxHandler } from "../platform/storage/OutboxHandlers.ts"
import type { WebhookDeliveriesShape, WebhookDelivery } from "./WebhookDeliveries.ts"

/** A `bosun-inbox` row of a delivery: which one to apply. */
export const DeliveryPointer = Schema.Struct({ organization_id: Schema.String, delivery_id: Schema.String })

/**
 * What applying a delivery came to: why it was ignored (null when it was acted on), and whether
 * the work queued or cancelled a run, so that the Scheduler is woken once the transaction
 * committed (before, it would not see the rows).
 */
export interface DeliveryOutcome {
  readonly ignoredReason: string | null
  readonly wakeScheduler: boolean
}

/** An outcome whose work, when there was any, is the Scheduler's to pick up. */
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
    return Effect.fn(`${name}.handle`)(function* (pointer: typeof DeliveryPointer.Type) {
      const wakeAfterCommit = yield* outbox
        .transaction(
          Effect.gen(function* () {
            yield* deliveries.serialize(pointer.organization_id, pointer.delivery_id)
            const found = yield* deliveries.lock(pointer.organization_id, pointer.delivery_id)
            if (found._tag === "None" || found.value.processedAt !== null) return false
            const earlier = yield* deliveries.lockPendingBefore(found.value)
            let wakeScheduler = false
            for (const delivery of [...earlier, found.value]) {
              const outcome = yield* apply(delivery)
              yield* deliveries.markProcessed(delivery.organizationId, delivery.deliveryId, outcome.ignoredReason)
              yield* Effect.logInfo(`${name}_delivery_processed`).pipe(
                Effect.annotateLogs({
                  org_id: delivery.organizationId,
                  delivery_id: delivery.deliveryId,
                  event: delivery.event,
                  action: delivery.action,
                  ignored_reason: outcome.ignoredReason,
                  ...(delivery === found.value ? {} : { applied_before: pointer.delivery_id })
                })
              )
              wakeScheduler ||= outcome.wakeScheduler
            }
            return wakeScheduler
          })
        )
        .pipe(Effect.orDie)
      if (wakeAfterCommit) yield* wake
    })
  })

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
