/**
 * Leading-edge batching of an attempt's event tail (docs/interface.md: Events 1 — an event is
 * readable within the flush interval, and the first event after a quiet spell is not held for it).
 *
 * `Stream.groupedWithin` starts its timer when a group's first element arrives, so every event that
 * follows a pause — the run's first event above all — waits the whole interval before it is
 * written and fanned out. Here a batch is emitted at once when the last one went out more than an
 * interval ago; only events that keep arriving inside the interval are gathered, and they go out
 * when it ends or when `maxSize` of them are waiting. The database therefore still sees at most one
 * write per interval from a busy attempt, and a quiet one answers at the speed of its events. An
 * element marked `final` (the run's end, for the execute step) is not held either.
 */
import { Clock, Duration, Effect, Exit, Option, Queue, Stream } from "effect"

export interface LeadingBatchesOptions<A> {
  /**
   * An element after which nothing is worth waiting for (the run's end): a batch holding one goes
   * out at once instead of at the end of the interval.
   */
  readonly final?: (element: A) => boolean
}

export const leadingBatches =
  <A>(maxSize: number, interval: Duration.Input, options: LeadingBatchesOptions<A> = {}) =>
  <E, R>(self: Stream.Stream<A, E, R>): Stream.Stream<ReadonlyArray<A>, E, R> =>
    Stream.unwrap(
      Effect.gen(function* () {
        const limit = Math.max(1, Math.floor(maxSize))
        const intervalMillis = Duration.toMillis(interval)
        const final = options.final ?? (() => false)
        const queue = yield* Stream.toQueue(self, { capacity: limit * 2 })
        let lastEmit = Number.NEGATIVE_INFINITY

        const next = Effect.gen(function* () {
          const batch = Array.from(yield* Queue.takeBetween(queue, 1, limit))
          const deadline = lastEmit + intervalMillis
          // Inside the interval, gather what arrives until it ends, the batch is full, or the final
          // element came. The wait is a peek, which takes nothing, so the timer that ends it can
          // drop nothing; what it saw is then taken at once. A peek that fails (the stream ended
          // or failed) ends the gathering: the batch goes out, the next pull meets the end.
          while (batch.length < limit && !batch.some(final)) {
            const wait = deadline - (yield* Clock.currentTimeMillis)
            if (wait <= 0) break
            const arrived = yield* Queue.peek(queue).pipe(Effect.timeoutOption(Duration.millis(wait)), Effect.exit)
            if (Exit.isFailure(arrived) || Option.isNone(arrived.value)) break
            batch.push(...(yield* Queue.takeBetween(queue, 1, limit - batch.length)))
          }
          lastEmit = yield* Clock.currentTimeMillis
          return [batch] as const
        })
        return Stream.fromPull(Effect.succeed(next))
      })
    )
