/**
 * Webhook deliveries of the chat and tracker providers (issue 9; `linear_deliveries`,
 * `slack_deliveries`, which share their columns): recorded once per delivery id, in the caller's
 * transaction, so the delivery row and its inbox outbox row commit together and a repeated
 * delivery is recognised by its id (`duplicate: true`); then locked, processed and marked by the
 * inbox in one transaction. Rows are scoped by organization. (GitHub's deliveries keep their own
 * table and module: they carry the installation and are placed before they are recorded.)
 */
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"

export interface WebhookDelivery {
  readonly deliveryId: string
  readonly organizationId: string
  /** The event's type (Linear: the entity, Issue or Comment; Slack: the inner event's type). */
  readonly event: string
  /** Linear: the action (create, update); Slack: the message subtype. */
  readonly action: string | null
  readonly payload: Readonly<Record<string, unknown>>
}

export interface WebhookDeliveriesShape {
  /** Records the delivery; false when its id was already recorded (nothing is written then). */
  readonly record: (
    delivery: WebhookDelivery,
    ignoredReason: string | null
  ) => Effect.Effect<boolean, never, SqlClient.SqlClient>
  /** The delivery, its row locked until the caller's transaction ends. */
  readonly lock: (
    organizationId: string,
    deliveryId: string
  ) => Effect.Effect<Option.Option<WebhookDelivery & { readonly processedAt: Date | null }>>
  readonly markProcessed: (
    organizationId: string,
    deliveryId: string,
    ignoredReason: string | null
  ) => Effect.Effect<void>
}

export const makeWebhookDeliveries = (table: "linear_deliveries" | "slack_deliveries") =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const name = sql.literal(table)

    const record = Effect.fn(`${table}.record`)(function* (delivery: WebhookDelivery, ignoredReason: string | null) {
      const tx = yield* SqlClient.SqlClient
      const inserted = yield* tx<{ delivery_id: string }>`
        INSERT INTO ${name} (delivery_id, organization_id, event, action, payload, processed_at, ignored_reason)
        VALUES (${delivery.deliveryId}, ${delivery.organizationId}, ${delivery.event}, ${delivery.action},
                ${JSON.stringify(delivery.payload)}::jsonb, ${ignoredReason === null ? null : new Date()}, ${ignoredReason})
        ON CONFLICT (delivery_id) DO NOTHING
        RETURNING delivery_id`.pipe(Effect.orDie)
      return inserted.length > 0
    })

    const lock = Effect.fn(`${table}.lock`)(function* (organizationId: string, deliveryId: string) {
      const [row] = yield* sql<{
        delivery_id: string
        organization_id: string
        event: string
        action: string | null
        payload: Record<string, unknown>
        processed_at: Date | null
      }>`SELECT delivery_id, organization_id, event, action, payload, processed_at
         FROM ${name} WHERE organization_id = ${organizationId} AND delivery_id = ${deliveryId}
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

    const markProcessed = Effect.fn(`${table}.markProcessed`)(function* (
      organizationId: string,
      deliveryId: string,
      ignoredReason: string | null
    ) {
      yield* sql`UPDATE ${name} SET processed_at = now(), ignored_reason = ${ignoredReason}
                 WHERE organization_id = ${organizationId} AND delivery_id = ${deliveryId}`.pipe(Effect.orDie)
    })

    return { record, lock, markProcessed } satisfies WebhookDeliveriesShape
  })
