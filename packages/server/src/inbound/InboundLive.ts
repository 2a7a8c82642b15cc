/**
 * The inbound side as layers: the recorded deliveries of GitHub, Slack and Linear, their handlers
 * on `bosun-inbox`, and the routes their webhooks arrive on. What a delivery starts is the
 * features' to do.
 */
import { Layer } from "effect"
import { GithubDeliveriesRepo } from "./github/GithubDeliveriesRepo.ts"
import { GithubInboxHandlersLive } from "./github/GithubInbox.ts"
import { LinearDeliveriesRepo } from "./linear/LinearDeliveriesRepo.ts"
import { LinearInboxHandlersLive } from "./linear/LinearInbox.ts"
import { LinearWebhooksHttp } from "./linear/LinearWebhooksHttp.ts"
import { SlackDeliveriesRepo } from "./slack/SlackDeliveriesRepo.ts"
import { SlackEventsHttp } from "./slack/SlackEventsHttp.ts"
import { SlackInboxHandlersLive } from "./slack/SlackInbox.ts"

export { GithubWebhooksRoute } from "./github/GithubWebhooksHttp.ts"

/** The deliveries as recorded; needs the SqlClient. */
export const DeliveriesLive = Layer.mergeAll(
  GithubDeliveriesRepo.layer,
  LinearDeliveriesRepo.layer,
  SlackDeliveriesRepo.layer
)

/** The three sources' delivery handlers, added to the `bosun-inbox` registry. */
export const InboundHandlersLive = Layer.mergeAll(
  GithubInboxHandlersLive,
  SlackInboxHandlersLive,
  LinearInboxHandlersLive
)

/** The `BosunApi` groups of Slack's and Linear's webhooks (GitHub's is a plain route: `GithubWebhooksRoute`). */
export const WebhooksHttpLive = Layer.merge(SlackEventsHttp, LinearWebhooksHttp)
