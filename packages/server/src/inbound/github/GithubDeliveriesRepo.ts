/**
 * GitHub App webhook deliveries (`sql/0021_github_deliveries.sql`, `sql/0040_…`): recorded once per
 * `X-GitHub-Delivery`, in the caller's transaction, so that the delivery row and its inbox outbox
 * row commit together and a redelivery is recognised by its id; then applied by the one inbox
 * pipeline (`inbound/ProcessDelivery.ts`) like Slack's and Linear's. Besides their shared columns,
 * GitHub's rows keep the installation the delivery came through.
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { makeWebhookDeliveries, type WebhookDeliveriesShape, type WebhookDelivery } from "../WebhookDeliveries.ts"

/** A GitHub delivery as the inbox applies it. */
export type GithubDelivery = WebhookDelivery

export class GithubDeliveriesRepo extends Context.Service<
  GithubDeliveriesRepo,
  Omit<WebhookDeliveriesShape, "record"> & {
    /** Records the delivery; false when its id was already recorded (nothing is written then). */
    readonly record: (
      delivery: GithubDelivery & { readonly installationId: number | null },
      ignoredReason: string | null
    ) => Effect.Effect<boolean>
    /**
     * The organization a delivery was recorded for: inbox rows written before their pointer named
     * it carry only the delivery's id (unique across organizations).
     */
    readonly organizationOf: (deliveryId: string) => Effect.Effect<Option.Option<string>>
  }
>()("bosun/server/persistence/GithubDeliveriesRepo") {
  static readonly layer = Layer.effect(
    GithubDeliveriesRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const shared = yield* makeWebhookDeliveries("github_deliveries")

      const record = Effect.fn("GithubDeliveriesRepo.record")(function* (
        delivery: GithubDelivery & { readonly installationId: number | null },
        ignoredReason: string | null
      ) {
        const inserted = yield* sql<{ delivery_id: string }>`
          INSERT INTO github_deliveries
            (delivery_id, organization_id, event, action, installation_id, payload, subject, processed_at, ignored_reason)
          VALUES (${delivery.deliveryId}, ${delivery.organizationId}, ${delivery.event}, ${delivery.action},
                  ${delivery.installationId}, ${JSON.stringify(delivery.payload)}::jsonb, ${delivery.subject},
                  ${ignoredReason === null ? null : new Date()}, ${ignoredReason})
          ON CONFLICT (delivery_id) DO NOTHING
          RETURNING delivery_id`.pipe(Effect.orDie)
        return inserted.length > 0
      })

      const organizationOf = Effect.fn("GithubDeliveriesRepo.organizationOf")(function* (deliveryId: string) {
        const [row] = yield* sql<{ organization_id: string }>`
          SELECT organization_id FROM github_deliveries WHERE delivery_id = ${deliveryId}`.pipe(Effect.orDie)
        return Option.map(Option.fromUndefinedOr(row), (found) => found.organization_id)
      })

      return GithubDeliveriesRepo.of({
        record,
        organizationOf,
        lock: shared.lock,
        serialize: shared.serialize,
        lockPendingBefore: shared.lockPendingBefore,
        markProcessed: shared.markProcessed
      })
    })
  )
}
