/**
 * Slack Events API deliveries (`sql/0027_slack_deliveries.sql`), one per `event_id`; the
 * shared `WebhookDeliveries` module says how they are recorded, locked and marked.
 */
import { Context, Layer } from "effect"
import { makeWebhookDeliveries, type WebhookDeliveriesShape, type WebhookDelivery } from "../WebhookDeliveries.ts"

export type SlackDelivery = WebhookDelivery

export class SlackDeliveriesRepo extends Context.Service<SlackDeliveriesRepo, WebhookDeliveriesShape>()(
  "bosun/server/persistence/SlackDeliveriesRepo"
) {
  static readonly layer = Layer.effect(SlackDeliveriesRepo, makeWebhookDeliveries("slack_deliveries"))
}
