/**
 * The one `bosun-inbox` consumer (docs/interface.md: What the service does 6, Events 3-5): every
 * source's deliveries arrive on the same queue as outbox wake-ups, and each row's kind names its
 * handler in the `InboxHandlers` registry (filled by `inbound/`, see `app/OutboxWorkers.ts`). A row
 * of a kind with no handler fails its message, which the queue retries and finally dead-letters
 * for an operator, rather than being marked done unread.
 */
import { Effect, Layer, Option } from "effect"
import { Migrator } from "../platform/db/Migrator.ts"
import { Outbox } from "../platform/storage/Outbox.ts"
import { InboxHandlers } from "../platform/storage/OutboxHandlers.ts"
import { MAX_DELIVERIES, Queues } from "../platform/storage/Queue.ts"

export const InboxConsumerLive = Layer.effectDiscard(
  Effect.gen(function* () {
    const queues = yield* Queues
    const outbox = yield* Outbox
    const migrator = yield* Migrator
    const handlers = yield* InboxHandlers
    yield* migrator.awaitReady.pipe(
      Effect.andThen(
        queues.consume("bosun-inbox", (message) =>
          outbox.handle(message, (row) =>
            Option.match(handlers.find(row.kind), {
              onNone: () => Effect.die(new Error(`bosun-inbox has no handler for kind ${row.kind}`)),
              onSome: (handler) =>
                handler
                  .handle(row.payload, { deliveries: message.deliveries, last: message.deliveries >= MAX_DELIVERIES })
                  .pipe(Effect.orDie)
            })
          )
        )
      ),
      Effect.forkScoped
    )
  })
)
