/**
 * Linear webhook deliveries (`sql/0025_linear.sql`), one per `Linear-Delivery`; the
 * shared `WebhookDeliveries` module says how they are recorded, locked and marked.
 */
import { Context, Layer } from "effect"
import { makeWebhookDeliveries, type WebhookDeliveriesShape, type WebhookDelivery } from "../WebhookDeliveries.ts"

export type LinearDelivery = WebhookDelivery

export class LinearDeliveriesRepo extends Context.Service<LinearDeliveriesRepo, WebhookDeliveriesShape>()(
  "bosun/server/persistence/LinearDeliveriesRepo"
) {
  static readonly layer = Layer.effect(LinearDeliveriesRepo, makeWebhookDeliveries("linear_deliveries"))
}
