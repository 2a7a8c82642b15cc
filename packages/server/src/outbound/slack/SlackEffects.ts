/**
 * The `bosun-effects` handlers of Slack effects (docs/interface.md: What the service does 3, 9): a
 * `slack.message` row names the channel, the thread, the text and the idempotency key. It is made
 * once through `EffectOnce`; one attempted before (a timeout or crash after Slack may have posted)
 * is first looked for in the thread by the key its metadata carries (SlackChat), so a retry never
 * posts a second message. `EffectsConsumer` routes the rows here by kind.
 */
import { Effect, Option, Schema } from "effect"
import { contribute, EffectHandlers, outboxHandler } from "../../platform/storage/OutboxHandlers.ts"
import { makeEffectOnce } from "../effects/EffectOnce.ts"
import { SlackChat } from "./SlackChat.ts"

export const SLACK_MESSAGE = "slack.message"

export const SlackMessage = Schema.Struct({
  organization_id: Schema.String,
  channel: Schema.String,
  thread_ts: Schema.optional(Schema.String),
  text: Schema.String,
  /** Buttons under the text (a plan's Approve and Reject); a click comes back as an interaction. */
  buttons: Schema.optional(
    Schema.Array(
      Schema.Struct({
        action_id: Schema.String,
        text: Schema.String,
        value: Schema.String,
        style: Schema.optional(Schema.Literals(["primary", "danger"]))
      })
    )
  ),
  idempotency_key: Schema.String
})
export type SlackMessage = typeof SlackMessage.Type

export const makeSlackEffectHandlers = Effect.gen(function* () {
  const once = yield* makeEffectOnce
  const slack = yield* SlackChat

  const postMessage = Effect.fn("SlackEffects.postMessage")(function* (message: typeof SlackMessage.Type) {
    const where = { channel: message.channel, threadTs: message.thread_ts, key: message.idempotency_key }
    yield* once({
      organizationId: message.organization_id,
      kind: SLACK_MESSAGE,
      key: message.idempotency_key,
      request: message,
      call: ({ attempted }) =>
        Effect.gen(function* () {
          const existing = attempted ? yield* slack.findPosted(message.organization_id, where) : Option.none()
          const ts = Option.isSome(existing)
            ? existing.value
            : yield* slack.post(message.organization_id, { ...where, text: message.text, buttons: message.buttons })
          return { channel: message.channel, ts }
        })
    })
  })

  return [outboxHandler(SLACK_MESSAGE, SlackMessage, postMessage)]
})

/** Adds these handlers to the `bosun-effects` registry. */
export const SlackEffectHandlersLive = contribute(EffectHandlers, makeSlackEffectHandlers)
