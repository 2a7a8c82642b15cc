/**
 * The one `bosun-inbox` consumer (docs/interface.md: What the service does 6, Events 3-5): every
 * source's deliveries arrive on the same queue as outbox wake-ups, and each row's kind names the
 * handler (GitHub: `inbound/github/GithubInbox.ts`, Linear: `inbound/linear/LinearInbox.ts`, Slack:
 * `inbound/slack/SlackInbox.ts`). A row of a kind with no handler fails its message, which the
 * queue retries and finally dead-letters for an operator, rather than being marked done unread.
 */
import { Effect, Layer } from "effect"
import { makeGithubInboxHandler } from "../inbound/github/GithubInbox.ts"
import { GITHUB_DELIVERY_KIND } from "../inbound/github/GithubWebhooksHttp.ts"
import { makeLinearInboxHandler } from "../inbound/linear/LinearInbox.ts"
import { LINEAR_DELIVERY_KIND } from "../inbound/linear/LinearWebhooksHttp.ts"
import { SLACK_DELIVERY_KIND } from "../inbound/slack/SlackEventsHttp.ts"
import { makeSlackInboxHandler } from "../inbound/slack/SlackInbox.ts"
import { Migrator } from "../platform/db/Migrator.ts"
import { Outbox } from "../platform/storage/Outbox.ts"
import { Queues } from "../platform/storage/Queue.ts"

export const InboxConsumerLive = Layer.effectDiscard(
  Effect.gen(function* () {
    const queues = yield* Queues
    const outbox = yield* Outbox
    const migrator = yield* Migrator
    const handlers: ReadonlyMap<string, (payload: unknown) => Effect.Effect<void>> = new Map([
      [GITHUB_DELIVERY_KIND, yield* makeGithubInboxHandler],
      [LINEAR_DELIVERY_KIND, yield* makeLinearInboxHandler],
      [SLACK_DELIVERY_KIND, yield* makeSlackInboxHandler]
    ])
    yield* migrator.awaitReady.pipe(
      Effect.andThen(
        queues.consume("bosun-inbox", (message) =>
          outbox.handle(message, (row) => {
            const handler = handlers.get(row.kind)
            return handler === undefined
              ? Effect.die(new Error(`bosun-inbox has no handler for kind ${row.kind}`))
              : handler(row.payload)
          })
        )
      ),
      Effect.forkScoped
    )
  })
)
