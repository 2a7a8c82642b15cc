/**
 * Leading-edge batching of an attempt's event tail (SPEC "Run events": an event is readable within
 * the flush interval, and the first event after a quiet spell is not held for it).
 *
 * `Stream.groupedWithin` starts its timer when a group's first element arrives, so every event that
 * follows a pause — the run's first event above all — waits the whole interval before it is
 * written and fanned out. Here a batch is emitted at once when the last one went out more than an
 * interval ago; only events that keep arriving inside the interval are gathered, and they go out
 * when it ends or when `maxSize` of them are waiting. The database therefore still sees at most one
 * write per interval from a busy attempt, and a quiet one answers at the speed of its events.
 */
import { Clock, Duration, Effect, Queue, Stream } from "effect"

export const leadingBatches =
  (maxSize: number, interval: Duration.Input) =>
  <A, E, R>(self: Stream.Stream<A, E, R>): Stream.Stream<ReadonlyArray<A>, E, R> =>
    Stream.unwrap(
      Effect.gen(function* () {
        const limit = Math.max(1, Math.floor(maxSize))
        const intervalMillis = Duration.toMillis(interval)
        const queue = yield* Stream.toQueue(self, { capacity: limit * 2 })
        let lastEmit = Number.NEGATIVE_INFINITY

        const next = Effect.gen(function* () {
          const batch = Array.from(yield* Queue.takeBetween(queue, 1, limit))
          const wait = lastEmit + intervalMillis - (yield* Clock.currentTimeMillis)
          if (wait > 0 && batch.length < limit) {
            yield* Effect.sleep(Duration.millis(wait))
            // Without waiting: a take of 0..n answers [] at once even when messages are queued, and
            // an ended stream's last messages are still counted by size (the next pull ends it).
            const rest = (yield* Queue.size(queue)) > 0 ? yield* Queue.takeBetween(queue, 1, limit - batch.length) : []
            batch.push(...rest)
          }
          lastEmit = yield* Clock.currentTimeMillis
          return [batch] as const
        })
        return Stream.fromPull(Effect.succeed(next))
      })
    )
