/**
 * GitHub App webhook deliveries (`sql/0021_github_deliveries.sql`): recorded once per
 * `X-GitHub-Delivery`, in the caller's transaction, so that the delivery row and its inbox outbox
 * row commit together and a redelivery is recognised by its id.
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"

export interface GithubDelivery {
  readonly deliveryId: string
  readonly organizationId: string
  readonly event: string
  readonly action: string | null
  readonly installationId: number | null
  readonly payload: Readonly<Record<string, unknown>>
}

export class GithubDeliveriesRepo extends Context.Service<
  GithubDeliveriesRepo,
  {
    /** Records the delivery; false when its id was already recorded (nothing is written then). */
    readonly record: (
      delivery: GithubDelivery,
      ignoredReason: string | null
    ) => Effect.Effect<boolean, never, SqlClient.SqlClient>
    /** The delivery; with `forUpdate`, its row stays locked until the caller's transaction ends. */
    readonly find: (
      deliveryId: string,
      options?: { readonly forUpdate?: boolean }
    ) => Effect.Effect<Option.Option<GithubDelivery & { readonly processedAt: Date | null }>>
    /** Marks the delivery handled, with why nothing was done when nothing was. */
    readonly markProcessed: (deliveryId: string, ignoredReason: string | null) => Effect.Effect<void>
  }
>()("bosun/server/persistence/GithubDeliveriesRepo") {
  static readonly layer = Layer.effect(
    GithubDeliveriesRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const record = Effect.fn("GithubDeliveriesRepo.record")(function* (
        delivery: GithubDelivery,
        ignoredReason: string | null
      ) {
        const tx = yield* SqlClient.SqlClient
        const inserted = yield* tx<{ delivery_id: string }>`
          INSERT INTO github_deliveries
            (delivery_id, organization_id, event, action, installation_id, payload, processed_at, ignored_reason)
          VALUES (${delivery.deliveryId}, ${delivery.organizationId}, ${delivery.event}, ${delivery.action},
                  ${delivery.installationId}, ${JSON.stringify(delivery.payload)}::jsonb,
                  ${ignoredReason === null ? null : new Date()}, ${ignoredReason})
          ON CONFLICT (delivery_id) DO NOTHING
          RETURNING delivery_id`.pipe(Effect.orDie)
        return inserted.length > 0
      })

      const find = Effect.fn("GithubDeliveriesRepo.find")(function* (
        deliveryId: string,
        options?: { readonly forUpdate?: boolean }
      ) {
        const [row] = yield* sql<{
          delivery_id: string
          organization_id: string
          event: string
          action: string | null
          installation_id: string | null
          payload: Record<string, unknown>
          processed_at: Date | null
        }>`SELECT delivery_id, organization_id, event, action, installation_id::text AS installation_id, payload, processed_at
           FROM github_deliveries WHERE delivery_id = ${deliveryId}
           ${options?.forUpdate === true ? sql`FOR UPDATE` : sql``}`.pipe(Effect.orDie)
        if (row === undefined) return Option.none()
        return Option.some({
          deliveryId: row.delivery_id,
          organizationId: row.organization_id,
          event: row.event,
          action: row.action,
          installationId: row.installation_id === null ? null : Number(row.installation_id),
          payload: row.payload,
          processedAt: row.processed_at
        })
      })

      const markProcessed = Effect.fn("GithubDeliveriesRepo.markProcessed")(function* (
        deliveryId: string,
        ignoredReason: string | null
      ) {
        yield* sql`UPDATE github_deliveries SET processed_at = now(), ignored_reason = ${ignoredReason}
                   WHERE delivery_id = ${deliveryId}`.pipe(Effect.orDie)
      })

      return GithubDeliveriesRepo.of({ record, find, markProcessed })
    })
  )
}
