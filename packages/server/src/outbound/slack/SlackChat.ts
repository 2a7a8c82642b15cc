/**
 * Bosun's side of Slack's Web API (docs/interface.md: What the service does 3, 9): who a bot token
 * is (`auth.test`, when an organization connects), posting into a thread, updating a message,
 * and finding a message Bosun already posted — through the official `@slack/web-api` client at
 * `BOSUN_SLACK_API_URL`, with the organization's sealed bot token opened per call.
 *
 * Every message Bosun posts carries Slack message metadata (`event_type` `bosun_effect`, the
 * effect's idempotency key in `event_payload`), so a retry after a timeout can look in the thread
 * (or channel) before posting again: Slack has no idempotency key of its own for
 * `chat.postMessage`. The client is told not to retry and to reject rate-limited calls, so a
 * 429's `Retry-After` reaches the effects consumer, which waits it out (ProviderCallError).
 *
 * A message with buttons is sent as Block Kit: its text in `section` blocks (Slack takes at most
 * 3,000 characters per section) and one `actions` block; `text` stays the notification's and the
 * screen reader's fallback. A click comes back to `POST /api/v1/slack/interactions`.
 */
import { ErrorCode, WebClient } from "@slack/web-api"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { ProviderCallError } from "../ProviderCallError.ts"
import { SlackConnectionsRepo } from "./SlackConnectionsRepo.ts"

export const EFFECT_METADATA_TYPE = "bosun_effect"

export interface SlackIdentity {
  readonly teamId: string
  readonly teamName: string | null
  readonly botUserId: string
}

/** A button under a message; its click is delivered with `action_id` and `value`. */
export interface SlackButton {
  readonly action_id: string
  readonly text: string
  readonly value: string
  readonly style?: "primary" | "danger" | undefined
}

const SECTION_LIMIT = 3000
/** Slack's limit is 50 blocks; the last is the buttons'. */
const MAX_SECTIONS = 49

/** The Block Kit form of a message with buttons. */
export const blocksOf = (text: string, buttons: ReadonlyArray<SlackButton>) => {
  const sections: Array<string> = []
  for (let at = 0; at < text.length && sections.length < MAX_SECTIONS; at += SECTION_LIMIT) {
    sections.push(text.slice(at, at + SECTION_LIMIT))
  }
  return [
    ...sections.map((part) => ({ type: "section" as const, text: { type: "mrkdwn" as const, text: part } })),
    {
      type: "actions" as const,
      elements: buttons.map((button) => ({
        type: "button" as const,
        action_id: button.action_id,
        text: { type: "plain_text" as const, text: button.text.slice(0, 75) },
        value: button.value,
        ...(button.style === undefined ? {} : { style: button.style })
      }))
    }
  ]
}

export interface SlackPost {
  readonly channel: string
  /** The thread's parent `ts`; absent, the message starts a thread of its own. */
  readonly threadTs?: string | undefined
  readonly text: string
  /** Buttons under the text; none when empty or absent. */
  readonly buttons?: ReadonlyArray<SlackButton> | undefined
  /** The effect's idempotency key, carried in the message metadata. */
  readonly key: string
}

const failure = (method: string, cause: unknown): ProviderCallError => {
  const code = typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
  if (code === ErrorCode.RateLimitedError && cause instanceof Error && "retryAfter" in cause) {
    const seconds = typeof cause.retryAfter === "number" ? cause.retryAfter : 1
    return new ProviderCallError({
      provider: "slack",
      reason: "RateLimited",
      message: `Slack ${method}: rate limited (Retry-After ${seconds} s)`,
      retryAfter: Duration.seconds(seconds)
    })
  }
  if (code === ErrorCode.PlatformError && cause instanceof Error && "data" in cause) {
    const data = cause.data as { readonly error?: unknown }
    return new ProviderCallError({
      provider: "slack",
      reason: "Refused",
      message: `Slack ${method}: ${typeof data.error === "string" ? data.error : "an error"}`
    })
  }
  if (code === ErrorCode.HTTPError && cause instanceof Error && "statusCode" in cause) {
    return new ProviderCallError({
      provider: "slack",
      reason: "Unavailable",
      message: `Slack ${method}: HTTP ${String(cause.statusCode)}`
    })
  }
  return new ProviderCallError({ provider: "slack", reason: "Unavailable", message: `Slack ${method}: unreachable` })
}

interface SlackMessage {
  readonly ts?: string
  readonly metadata?: { readonly event_type?: string; readonly event_payload?: { readonly key?: unknown } }
}

export class SlackChat extends Context.Service<
  SlackChat,
  {
    /** Who the token is: Slack's `auth.test`. */
    readonly identify: (token: Redacted.Redacted<string>) => Effect.Effect<SlackIdentity, ProviderCallError>
    /** Posts the message; answers its `ts`. */
    readonly post: (organizationId: string, message: SlackPost) => Effect.Effect<string, ProviderCallError>
    /** The `ts` of the message carrying `key` in the thread (or the channel's latest), if Bosun posted it. */
    readonly findPosted: (
      organizationId: string,
      where: { readonly channel: string; readonly threadTs?: string | undefined; readonly key: string }
    ) => Effect.Effect<Option.Option<string>, ProviderCallError>
    readonly update: (
      organizationId: string,
      message: { readonly channel: string; readonly ts: string; readonly text: string }
    ) => Effect.Effect<void, ProviderCallError>
  }
>()("bosun/server/providers/SlackChat") {
  static readonly layer = Layer.effect(
    SlackChat,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const connections = yield* SlackConnectionsRepo

      const clientWith = (token: Redacted.Redacted<string>) =>
        new WebClient(Redacted.value(token), {
          slackApiUrl: config.slackApiUrl.href,
          rejectRateLimitedCalls: true,
          retryConfig: { retries: 0 },
          timeout: 10_000
        })

      const clientOf = (organizationId: string) =>
        connections.botToken(organizationId).pipe(
          Effect.mapError(
            () =>
              new ProviderCallError({
                provider: "slack",
                reason: "NotConnected",
                message: "The organization's Slack bot token could not be opened"
              })
          ),
          Effect.flatMap(
            Option.match({
              onNone: () =>
                Effect.fail(
                  new ProviderCallError({
                    provider: "slack",
                    reason: "NotConnected",
                    message: "The organization is not connected to Slack"
                  })
                ),
              onSome: (token) => Effect.succeed(clientWith(token))
            })
          )
        )

      const call = <A>(method: string, run: (signal: AbortSignal) => Promise<A>) =>
        Effect.tryPromise({ try: run, catch: (cause) => failure(method, cause) })

      return SlackChat.of({
        identify: Effect.fn("SlackChat.identify")(function* (token: Redacted.Redacted<string>) {
          const client = clientWith(token)
          const answer = yield* call("auth.test", () => client.auth.test())
          if (typeof answer.team_id !== "string" || typeof answer.user_id !== "string") {
            return yield* new ProviderCallError({
              provider: "slack",
              reason: "Refused",
              message: "Slack auth.test: the answer names no team or user"
            })
          }
          return {
            teamId: answer.team_id,
            teamName: typeof answer.team === "string" ? answer.team : null,
            botUserId: answer.user_id
          }
        }),
        post: Effect.fn("SlackChat.post")(function* (organizationId: string, message: SlackPost) {
          const client = yield* clientOf(organizationId)
          const answer = yield* call("chat.postMessage", () =>
            client.chat.postMessage({
              channel: message.channel,
              text: message.text,
              ...(message.buttons === undefined || message.buttons.length === 0
                ? {}
                : { blocks: blocksOf(message.text, message.buttons) }),
              ...(message.threadTs === undefined ? {} : { thread_ts: message.threadTs }),
              metadata: { event_type: EFFECT_METADATA_TYPE, event_payload: { key: message.key } }
            })
          )
          if (typeof answer.ts !== "string") {
            return yield* new ProviderCallError({
              provider: "slack",
              reason: "Unavailable",
              message: "Slack chat.postMessage: the answer has no ts"
            })
          }
          return answer.ts
        }),
        findPosted: Effect.fn("SlackChat.findPosted")(function* (
          organizationId: string,
          where: { readonly channel: string; readonly threadTs?: string | undefined; readonly key: string }
        ) {
          const client = yield* clientOf(organizationId)
          const messages: ReadonlyArray<SlackMessage> =
            where.threadTs === undefined
              ? ((yield* call("conversations.history", () =>
                  client.conversations.history({ channel: where.channel, include_all_metadata: true, limit: 100 })
                )).messages ?? [])
              : ((yield* call("conversations.replies", () =>
                  client.conversations.replies({
                    channel: where.channel,
                    ts: where.threadTs as string,
                    include_all_metadata: true,
                    limit: 200
                  })
                )).messages ?? [])
          const found = messages.find(
            (message) =>
              message.metadata?.event_type === EFFECT_METADATA_TYPE && message.metadata.event_payload?.key === where.key
          )
          return Option.fromUndefinedOr(found?.ts)
        }),
        update: Effect.fn("SlackChat.update")(function* (
          organizationId: string,
          message: { readonly channel: string; readonly ts: string; readonly text: string }
        ) {
          const client = yield* clientOf(organizationId)
          yield* call("chat.update", () =>
            client.chat.update({ channel: message.channel, ts: message.ts, text: message.text })
          )
        })
      })
    })
  )
}
