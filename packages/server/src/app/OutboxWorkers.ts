/**
 * The two outbox consumers with their handlers: `bosun-inbox` with every source's delivery
 * handler, `bosun-effects` with every provider call's. The consumers know only the registries;
 * this is where the handlers of `inbound/`, `outbound/` and the reviews feature are put in them,
 * before the consumers start.
 */
import { Layer } from "effect"
import { ReviewDeliveryHandlersLive } from "../features/reviews/ReviewsSlice.ts"
import { InboundHandlersLive } from "../inbound/InboundLive.ts"
import { OutboundEffectHandlersLive } from "../outbound/OutboundLive.ts"
import { EffectHandlers, InboxHandlers } from "../platform/storage/OutboxHandlers.ts"
import { EffectsConsumerLive } from "./EffectsConsumer.ts"
import { InboxConsumerLive } from "./InboxConsumer.ts"

/** The `bosun-inbox` consumer, started once GitHub's, Slack's and Linear's handlers are registered. */
export const InboxWorkerLive = InboxConsumerLive.pipe(
  Layer.provide(InboundHandlersLive),
  Layer.provide(InboxHandlers.layer)
)

/** The `bosun-effects` consumer, started once every provider call's handler is registered. */
export const EffectsWorkerLive = EffectsConsumerLive.pipe(
  Layer.provide(Layer.merge(OutboundEffectHandlersLive, ReviewDeliveryHandlersLive)),
  Layer.provide(EffectHandlers.layer)
)
