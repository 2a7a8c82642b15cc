/**
 * The `bosun-inbox` handler of Slack deliveries (docs/interface.md: What the service does 3;
 * Resources "Work item", "Chat channel"; Events 3): one thread is one work item (session
 * `slack:{team}:{channel}:{thread ts}`).
 *
 * - A message addressed to Bosun starts the thread's work item (source CHAT, OPEN in INTAKE, the
 *   text without mentions as title, the whole text as summary, the Slack user as requester, the
 *   thread's link as source URL) and queues its intake run: an `app_mention`, a direct message to
 *   the bot, or a top-level message in a channel with passive listening on. The `message` event Slack also sends for a
 *   mention is recognised by the mention and not counted twice.
 * - Any other message in a thread that has a work item is a follow-up of it (`features/workItems/FollowUps.ts`):
 *   an approval or rejection of its plan, or part of the conversation, which queues a new intake
 *   run behind the thread's running one.
 * - Bosun's own and other bots' messages, edits and deletions (subtypes), and messages not
 *   addressed to Bosun are recorded as ignored, with why.
 *
 * - A click on a plan's Approve or Reject button (a `block_actions` delivery from
 *   `/slack/interactions`) is that action on the work item its value names — only when the button
 *   sits in that item's own thread — applied and audited as the same reply would be
 *   (`FollowUps.planAction`), and said in the thread (who approved or rejected).
 *
 * Every channel an event comes from is recorded (ChatChannelsRepo.observe), so passive listening
 * can be switched on for it. Each delivery is applied once (`ProcessDelivery`).
 */
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import { Effect, Option, Schema } from "effect"
import { Sharding } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { ChatChannelsRepo } from "../../features/workItems/ChatChannelsRepo.ts"
import { makeFollowUps } from "../../features/workItems/FollowUps.ts"
import { PLAN_BUTTON_ACTIONS, replyEffect } from "../../features/workItems/WorkItemReplies.ts"
import { WorkItemRuns } from "../../features/workItems/WorkItemRuns.ts"
import { WorkItemsRepo } from "../../features/workItems/WorkItemsRepo.ts"
import { SlackConnectionsRepo } from "../../outbound/slack/SlackConnectionsRepo.ts"
import { Outbox } from "../../platform/storage/Outbox.ts"
import { contribute, InboxHandlers } from "../../platform/storage/OutboxHandlers.ts"
import { actedOn, processDeliveryOnce } from "../ProcessDelivery.ts"
import type { WebhookDelivery } from "../WebhookDeliveries.ts"
import { SlackDeliveriesRepo } from "./SlackDeliveriesRepo.ts"
import { SLACK_BLOCK_ACTIONS, SLACK_DELIVERY_KIND } from "./SlackEventsHttp.ts"

const MessageEvent = Schema.Struct({
  type: Schema.String,
  subtype: Schema.optional(Schema.String),
  channel: Schema.String,
  channel_type: Schema.optional(Schema.String),
  user: Schema.optional(Schema.String),
  bot_id: Schema.optional(Schema.String),
  text: Schema.optional(Schema.String),
  ts: Schema.String,
  thread_ts: Schema.optional(Schema.String)
})

const EventCallback = Schema.Struct({ team_id: Schema.String, event: MessageEvent })

/** The fields of a `block_actions` interaction Bosun reads. */
const BlockActions = Schema.Struct({
  team: Schema.Struct({ id: Schema.String }),
  user: Schema.Struct({ id: Schema.String }),
  channel: Schema.Struct({ id: Schema.String }),
  message: Schema.Struct({ ts: Schema.String, thread_ts: Schema.optional(Schema.String) }),
  actions: Schema.Array(Schema.Struct({ action_id: Schema.String, value: Schema.optional(Schema.String) }))
})

const SUMMARY_LIMIT = 4000
const MENTION = /<@[A-Z0-9]+(?:\|[^>]*)?>/g

/** A message's text as a title: mentions dropped, whitespace collapsed, at most 120 characters. */
export const titleOfMessage = (text: string) => {
  const plain = text.replace(MENTION, " ").replace(/\s+/g, " ").trim()
  if (plain.length === 0) return "Slack message"
  return plain.length > 120 ? `${plain.slice(0, 117)}...` : plain
}

/** The thread's link in Slack's web client. */
export const threadUrl = (team: string, channel: string, threadTs: string) =>
  `https://app.slack.com/client/${team}/${channel}/thread/${channel}-${threadTs}`

export const makeSlackInboxHandler = Effect.gen(function* () {
  const deliveries = yield* SlackDeliveriesRepo
  const connections = yield* SlackConnectionsRepo
  const channels = yield* ChatChannelsRepo
  const workItems = yield* WorkItemsRepo
  const workItemRuns = yield* WorkItemRuns
  const sql = yield* SqlClient.SqlClient
  const { followUp, planAction } = yield* makeFollowUps
  const outbox = yield* Outbox

  const applyClick = (delivery: WebhookDelivery) =>
    Effect.gen(function* () {
      const decoded = yield* Effect.result(Schema.decodeUnknownEffect(BlockActions)(delivery.payload))
      if (decoded._tag === "Failure") return `the payload is not a button click: ${decoded.failure.message}`
      const click = decoded.success
      const button = click.actions.find((action) => Object.hasOwn(PLAN_BUTTON_ACTIONS, action.action_id))
      const action = button === undefined ? undefined : PLAN_BUTTON_ACTIONS[button.action_id]
      if (button?.value === undefined || action === undefined) return "no Approve or Reject button was clicked"
      const sessionKey = `slack:${click.team.id}:${click.channel.id}:${click.message.thread_ts ?? click.message.ts}`
      const [item] = yield* sql<{ id: string }>`
        SELECT id FROM work_items
        WHERE organization_id = ${delivery.organizationId} AND id = ${button.value} AND session_key = ${sessionKey}`.pipe(
        Effect.orDie
      )
      if (item === undefined) return "the button does not belong to a work item of its thread"
      const skipped = yield* planAction(
        delivery.organizationId,
        { id: item.id, sessionKey },
        action,
        `slack:${click.team.id}:${click.user.id}`
      )
      if (skipped !== null) return skipped
      const said =
        action === "APPROVE"
          ? `<@${click.user.id}> approved the plan. Bosun is making the change and will post the pull request here.`
          : `<@${click.user.id}> rejected the plan; nothing will be changed.`
      const reply = replyEffect(delivery.organizationId, sessionKey, said, `work_item.button:${delivery.deliveryId}`)
      if (Option.isSome(reply)) {
        yield* outbox.write("bosun-effects", reply.value.kind, reply.value.payload).pipe(Effect.orDie)
      }
      return null
    })

  const apply = (delivery: WebhookDelivery) =>
    Effect.gen(function* () {
      if (delivery.event === SLACK_BLOCK_ACTIONS) return yield* applyClick(delivery)
      const connection = yield* connections.find(delivery.organizationId)
      if (Option.isNone(connection)) return "the organization is no longer connected to Slack"
      const decoded = yield* Effect.result(Schema.decodeUnknownEffect(EventCallback)(delivery.payload))
      if (decoded._tag === "Failure") return `the payload is not a Slack message event: ${decoded.failure.message}`
      const { team_id: team, event } = decoded.success
      const bot = connection.value.bot_user_id
      if (event.bot_id !== undefined || event.user === bot) return "a bot's message (Bosun's own included)"
      if (event.subtype !== undefined) return `message ${event.subtype} is not acted on`
      if (event.user === undefined) return "the message has no author"
      const channel = yield* channels.observe(delivery.organizationId, {
        id: event.channel,
        isPrivate: event.channel_type === "group" || event.channel_type === "mpim"
      })
      const text = event.text ?? ""
      const threadTs = event.thread_ts ?? event.ts
      const sessionKey = `slack:${team}:${event.channel}:${threadTs}`
      const mentioned = text.includes(`<@${bot}>`) || text.includes(`<@${bot}|`)
      if (event.type === "message" && mentioned) return "a mention, handled as its app_mention"

      const [existing] = yield* sql<{ id: string }>`
        SELECT id FROM work_items
        WHERE organization_id = ${delivery.organizationId} AND session_key = ${sessionKey}`.pipe(Effect.orDie)
      if (existing !== undefined) {
        return yield* followUp(
          delivery.organizationId,
          { id: existing.id, sessionKey },
          {
            author: event.user,
            text: text.replace(MENTION, " ").replace(/\s+/g, " ").trim(),
            deliveryId: delivery.deliveryId
          }
        )
      }

      const addressed =
        event.type === "app_mention" ||
        event.channel_type === "im" ||
        (channel.passive_enabled && event.thread_ts === undefined)
      if (!addressed) return "the message is not addressed to Bosun"
      const { item, created } = yield* workItems.forSession(delivery.organizationId, {
        kind: "TASK",
        source: "CHAT",
        sessionKey,
        title: titleOfMessage(text),
        summary: text.slice(0, SUMMARY_LIMIT),
        sourceUrl: threadUrl(team, event.channel, threadTs),
        requestedByLogin: event.user
      })
      if (!created) return `the thread already has work item ${item.id}`
      yield* workItemRuns.enqueueIntake(delivery.organizationId, { id: item.id, sessionKey, primaryRepositoryId: null })
      return null
    })

  const wake = Effect.provideService(wakeScheduler, Sharding.Sharding, yield* Sharding.Sharding)
  return yield* processDeliveryOnce(
    SLACK_DELIVERY_KIND,
    "slack",
    deliveries,
    (delivery) => Effect.map(apply(delivery), actedOn),
    wake
  )
})

/** Adds the handler to the `bosun-inbox` registry. */
export const SlackInboxHandlersLive = contribute(
  InboxHandlers,
  Effect.map(makeSlackInboxHandler, (handler) => [handler])
)
