/**
 * `bosun queues dead-letters list [--queue Q] [--limit N]` and `bosun queues dead-letters replay
 * --queue Q [--id ID ...]` (an effect that failed five deliveries is visible to the operator CLI
 * and replayable; docs/interface.md: Events 5). A dead letter of an outbox wake-up shows the row's
 * kind (`slack.message`, `github.pr_comment`...) and the last error its handler failed with — the
 * provider's error, never a secret. Replay moves the dead letters back to their queue with a fresh
 * delivery count; their handlers still make each effect once, so replaying one that meanwhile
 * succeeded does nothing twice.
 */
import { Console, Effect, Option, Schema } from "effect"
import { Command, Flag } from "effect/cli"
import { WakeUp } from "../../platform/storage/Outbox.ts"
import { QUEUE_NAMES, Queues } from "../../platform/storage/Queue.ts"
import { CliFailure } from "../CliFailure.ts"

const queue = Flag.Literals("queue", QUEUE_NAMES).pipe(Flag.withDescription("The queue whose dead letters to act on"))

const decodeWakeUp = Schema.decodeUnknownOption(Schema.fromJsonString(WakeUp))

/** The first line of the last error, bounded: a dead letter's error is a whole cause. */
const headline = (error: string) => {
  const line = error.split("\n").find((part) => part.trim().length > 0) ?? ""
  return line.length > 300 ? `${line.slice(0, 297)}...` : line
}

const failed = (what: string) => (error: { readonly message: string }) =>
  new CliFailure({ message: `${what}: ${error.message}` })

export const list = Command.make(
  "list",
  {
    queue: queue.pipe(Flag.optional),
    limit: Flag.Int("limit").pipe(
      Flag.withSchema(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 }))),
      Flag.withDescription("At most this many per queue, 1..1000"),
      Flag.withDefault(100)
    )
  },
  Effect.fn(function* ({ queue, limit }) {
    const queues = yield* Queues
    const names = Option.match(queue, { onNone: () => QUEUE_NAMES, onSome: (name) => [name] as const })
    let total = 0
    for (const name of names) {
      const letters = yield* queues.deadLetters.list(name, limit).pipe(Effect.mapError(failed("Listing failed")))
      const count = yield* queues.deadLetters.count(name).pipe(Effect.mapError(failed("Counting failed")))
      total += count
      for (const letter of letters) {
        const kind = Option.match(decodeWakeUp(letter.body), { onNone: () => "-", onSome: (wakeUp) => wakeUp.kind })
        yield* Console.log(
          [
            letter.id,
            letter.queue,
            `kind=${kind}`,
            `deliveries=${letter.deliveries}`,
            `failed_at=${letter.failedAt.toISOString()}`,
            `error=${JSON.stringify(headline(letter.lastError))}`
          ].join("\t")
        )
      }
      if (count > letters.length) yield* Console.log(`(${count - letters.length} more in ${name}-dlq not shown)`)
    }
    yield* Console.log(`${total} dead letter${total === 1 ? "" : "s"}`)
  })
).pipe(Command.withDescription("List the dead letters of one queue or of all"))

export const replay = Command.make(
  "replay",
  {
    queue,
    ids: Flag.String("id").pipe(
      Flag.atLeast(0),
      Flag.withDescription("Replay only this dead letter (repeatable); without it, every one of the queue")
    )
  },
  Effect.fn(function* ({ queue, ids }) {
    const queues = yield* Queues
    const replayed = yield* queues.deadLetters
      .replay(queue, ids.length === 0 ? undefined : ids)
      .pipe(Effect.mapError(failed("Replay failed")))
    if (ids.length > 0 && replayed < ids.length) {
      return yield* new CliFailure({
        message: `Replayed ${replayed} of ${ids.length}: the others are not dead letters of ${queue}`
      })
    }
    yield* Console.log(`Replayed ${replayed} dead letter${replayed === 1 ? "" : "s"} to ${queue}`)
  })
).pipe(Command.withDescription("Move dead letters back to their queue"))
