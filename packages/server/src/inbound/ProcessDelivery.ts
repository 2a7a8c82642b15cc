/**
 * How the Linear and Slack inbox handlers apply a delivery exactly once
 * (docs/interface.md: Events 3-4): the wake-up names the delivery; it is locked, applied and marked
 * processed (or ignored, with why) in one transaction, so a redelivered wake-up or a crash in
 * between applies nothing twice. Deliveries about one subject are applied in arrival order,
 * whatever order their wake-ups are handled in: the transaction serializes on the subject and first
 * applies the subject's earlier deliveries still pending (their own wake-ups then find them
 * processed). A database failure fails the message, which the queue retries and finally
 * dead-letters.
 */
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { WebhookDeliveriesShape, WebhookDelivery } from "./WebhookDeliveries.ts"

const Pointer = Schema.Struct({ organization_id: Schema.String, delivery_id: Schema.String })

/**
 * The inbox handler for `deliveries`: `apply` does the delivery's work in the transaction and
 * answers why it was ignored, or null when it was acted on; `afterCommit` then runs (waking the
 * Scheduler for the runs the work queued).
 */
export const processDeliveryOnce = (
  name: string,
  deliveries: WebhookDeliveriesShape,
  apply: (delivery: WebhookDelivery) => Effect.Effect<string | null>,
  afterCommit: Effect.Effect<void> = Effect.void
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return Effect.fn(`${name}.handle`)(function* (payload: unknown) {
      const pointer = yield* Schema.decodeUnknownEffect(Pointer)(payload).pipe(Effect.orDie)
      const acted = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* deliveries.serialize(pointer.organization_id, pointer.delivery_id)
            const found = yield* deliveries.lock(pointer.organization_id, pointer.delivery_id)
            if (found._tag === "None" || found.value.processedAt !== null) return false
            const earlier = yield* deliveries.lockPendingBefore(found.value)
            let acted = false
            for (const delivery of [...earlier, found.value]) {
              const outcome = yield* apply(delivery)
              yield* deliveries.markProcessed(delivery.organizationId, delivery.deliveryId, outcome)
              yield* Effect.logInfo(`${name}_delivery_processed`).pipe(
                Effect.annotateLogs({
                  org_id: delivery.organizationId,
                  delivery_id: delivery.deliveryId,
                  event: delivery.event,
                  action: delivery.action,
                  ignored_reason: outcome,
                  ...(delivery === found.value ? {} : { applied_before: pointer.delivery_id })
                })
              )
              acted ||= outcome === null
            }
            return acted
          })
        )
        .pipe(Effect.orDie)
      if (acted) yield* afterCommit
    })
  })
