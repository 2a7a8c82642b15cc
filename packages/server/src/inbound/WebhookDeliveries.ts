/**
 * Webhook deliveries of every source (`github_deliveries`, `linear_deliveries`, `slack_deliveries`,
 * which share these columns): recorded once per delivery id, in the caller's transaction, so the
 * delivery row and its inbox outbox row commit together and a repeated delivery is recognised by
 * its id (`duplicate: true`); then locked, processed and marked by the inbox in one transaction.
 * Deliveries about one subject (a pull request, a Linear issue, a Slack thread) are applied in
 * arrival order: the inbox serializes on the subject and applies the earlier pending ones first
 * (`serialize`, `lockPendingBefore`). Rows are scoped by organization. GitHub's deliveries record
 * the installation besides, in their own `record` (`GithubDeliveriesRepo`).
 */
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"

export interface WebhookDelivery {
  readonly deliveryId: string
  readonly organizationId: string
  /** The event's type (GitHub: X-GitHub-Event; Linear: the entity, Issue or Comment; Slack: the inner event's type). */
  readonly event: string
  /** GitHub and Linear: the action (opened, create, ...); Slack: the message subtype. */
  readonly action: string | null
  readonly payload: Readonly<Record<string, unknown>>
  /** What the delivery is about, where the order of deliveries matters (a pull request, a Linear issue id, a Slack thread). */
  readonly subject: string | null
}

export interface WebhookDeliveriesShape {
  /** Records the delivery; false when its id was already recorded (nothing is written then). */
  readonly record: (delivery: WebhookDelivery, ignoredReason: string | null) => Effect.Effect<boolean>
  /** The delivery, its row locked until the caller's transaction ends. */
  readonly lock: (
    organizationId: string,
    deliveryId: string
  ) => Effect.Effect<Option.Option<WebhookDelivery & { readonly processedAt: Date | null }>>
  /**
   * Waits, until the caller's transaction ends, for any other transaction applying a delivery of
   * the same subject, so that a subject's deliveries are applied one at a time (and rows are never
   * locked in opposite orders). Call it before `lock`; nothing is waited for without a subject.
   */
  readonly serialize: (organizationId: string, deliveryId: string) => Effect.Effect<void>
  /** The subject's unprocessed deliveries received before `delivery`, oldest first, their rows locked. */
  readonly lockPendingBefore: (delivery: WebhookDelivery) => Effect.Effect<ReadonlyArray<WebhookDelivery>>
  readonly markProcessed: (
    organizationId: string,
    deliveryId: string,
    ignoredReason: string | null
  ) => Effect.Effect<void>
}

interface DeliveryRow {
  readonly delivery_id: string
  readonly organization_id: string
  readonly event: string
  readonly action: string | null
  readonly payload: Record<string, unknown>
  readonly subject: string | null
}

const fromRow = (row: DeliveryRow): WebhookDelivery => ({
  deliveryId: row.delivery_id,
  organizationId: row.organization_id,
  event: row.event,
  action: row.action,
  payload: row.payload,
  subject: row.subject
})

export const makeWebhookDeliveries = (table: "github_deliveries" | "linear_deliveries" | "slack_deliveries") =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const name = sql.literal(table)

    const record = Effect.fn(`${table}.record`)(function* (delivery: WebhookDelivery, ignoredReason: string | null) {
      const inserted = yield* sql<{ delivery_id: string }>`
        INSERT INTO ${name} (delivery_id, organization_id, event, action, payload, subject, processed_at, ignored_reason)
        VALUES (${delivery.deliveryId}, ${delivery.organizationId}, ${delivery.event}, ${delivery.action},
                ${JSON.stringify(delivery.payload)}::jsonb, ${delivery.subject},
                ${ignoredReason === null ? null : new Date()}, ${ignoredReason})
        ON CONFLICT (delivery_id) DO NOTHING
        RETURNING delivery_id`.pipe(Effect.orDie)
      return inserted.length > 0
    })

    const lock = Effect.fn(`${table}.lock`)(function* (organizationId: string, deliveryId: string) {
      const [row] = yield* sql<DeliveryRow & { processed_at: Date | null }>`
        SELECT delivery_id, organization_id, event, action, payload, subject, processed_at
        FROM ${name} WHERE organization_id = ${organizationId} AND delivery_id = ${deliveryId}
        FOR UPDATE`.pipe(Effect.orDie)
      if (row === undefined) return Option.none()
      return Option.some({ ...fromRow(row), processedAt: row.processed_at })
    })

    const serialize = Effect.fn(`${table}.serialize`)(function* (organizationId: string, deliveryId: string) {
      yield* sql`
        SELECT pg_advisory_xact_lock(hashtext(${table} || ':' || organization_id || ':' || subject))
        FROM ${name}
        WHERE organization_id = ${organizationId} AND delivery_id = ${deliveryId} AND subject IS NOT NULL`.pipe(
        Effect.orDie
      )
    })

    const lockPendingBefore = Effect.fn(`${table}.lockPendingBefore`)(function* (delivery: WebhookDelivery) {
      if (delivery.subject === null) return []
      const rows = yield* sql<DeliveryRow>`
        SELECT d.delivery_id, d.organization_id, d.event, d.action, d.payload, d.subject
        FROM ${name} d, ${name} self
        WHERE self.organization_id = ${delivery.organizationId} AND self.delivery_id = ${delivery.deliveryId}
          AND d.organization_id = ${delivery.organizationId} AND d.subject = ${delivery.subject}
          AND d.processed_at IS NULL
          AND (d.received_at, d.delivery_id) < (self.received_at, self.delivery_id)
        ORDER BY d.received_at, d.delivery_id
        FOR UPDATE OF d`.pipe(Effect.orDie)
      return rows.map(fromRow)
    })

    const markProcessed = Effect.fn(`${table}.markProcessed`)(function* (
      organizationId: string,
      deliveryId: string,
      ignoredReason: string | null
    ) {
      yield* sql`UPDATE ${name} SET processed_at = now(), ignored_reason = ${ignoredReason}
                 WHERE organization_id = ${organizationId} AND delivery_id = ${deliveryId}`.pipe(Effect.orDie)
    })

    return { record, lock, serialize, lockPendingBefore, markProcessed } satisfies WebhookDeliveriesShape
  })
