/**
 * Linear webhook deliveries (issue 9; `sql/0025_linear.sql`): recorded once per `Linear-Delivery`,
 * in the caller's transaction, so the delivery row and its inbox outbox row commit together and a
 * repeated delivery is recognised by its id (`duplicate: true`). Rows are scoped by organization.
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"

export interface LinearDelivery {
  readonly deliveryId: string
  readonly organizationId: string
  /** `Linear-Event`: the payload's entity type (Issue, Comment, ...). */
  readonly event: string
  readonly action: string | null
  readonly payload: Readonly<Record<string, unknown>>
}

export class LinearDeliveriesRepo extends Context.Service<
  LinearDeliveriesRepo,
  {
    /** Records the delivery; false when its id was already recorded (nothing is written then). */
    readonly record: (
      delivery: LinearDelivery,
      ignoredReason: string | null
    ) => Effect.Effect<boolean, never, SqlClient.SqlClient>
    /** The delivery, its row locked until the caller's transaction ends. */
    readonly lock: (
      organizationId: string,
      deliveryId: string
    ) => Effect.Effect<Option.Option<LinearDelivery & { readonly processedAt: Date | null }>>
    readonly markProcessed: (
      organizationId: string,
      deliveryId: string,
      ignoredReason: string | null
    ) => Effect.Effect<void>
  }
>()("bosun/server/persistence/LinearDeliveriesRepo") {
  static readonly layer = Layer.effect(
    LinearDeliveriesRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const record = Effect.fn("LinearDeliveriesRepo.record")(function* (
        delivery: LinearDelivery,
        ignoredReason: string | null
      ) {
        const tx = yield* SqlClient.SqlClient
        const inserted = yield* tx<{ delivery_id: string }>`
          INSERT INTO linear_deliveries (delivery_id, organization_id, event, action, payload, processed_at, ignored_reason)
          VALUES (${delivery.deliveryId}, ${delivery.organizationId}, ${delivery.event}, ${delivery.action},
                  ${JSON.stringify(delivery.payload)}::jsonb, ${ignoredReason === null ? null : new Date()}, ${ignoredReason})
          ON CONFLICT (delivery_id) DO NOTHING
          RETURNING delivery_id`.pipe(Effect.orDie)
        return inserted.length > 0
      })

      const lock = Effect.fn("LinearDeliveriesRepo.lock")(function* (organizationId: string, deliveryId: string) {
        const [row] = yield* sql<{
          delivery_id: string
          organization_id: string
          event: string
          action: string | null
          payload: Record<string, unknown>
          processed_at: Date | null
        }>`SELECT delivery_id, organization_id, event, action, payload, processed_at
           FROM linear_deliveries WHERE organization_id = ${organizationId} AND delivery_id = ${deliveryId}
           FOR UPDATE`.pipe(Effect.orDie)
        if (row === undefined) return Option.none()
        return Option.some({
          deliveryId: row.delivery_id,
          organizationId: row.organization_id,
          event: row.event,
          action: row.action,
          payload: row.payload,
          processedAt: row.processed_at
        })
      })

      const markProcessed = Effect.fn("LinearDeliveriesRepo.markProcessed")(function* (
        organizationId: string,
        deliveryId: string,
        ignoredReason: string | null
      ) {
        yield* sql`UPDATE linear_deliveries SET processed_at = now(), ignored_reason = ${ignoredReason}
                   WHERE organization_id = ${organizationId} AND delivery_id = ${deliveryId}`.pipe(Effect.orDie)
      })

      return LinearDeliveriesRepo.of({ record, lock, markProcessed })
    })
  )
}
