/**
 * The consumer engine both queue adapters share, so that bounded concurrency, heartbeats, the
 * failure rule and the dead-letter rule are written once. An adapter supplies a `QueueDriver`:
 * how to claim messages, ack, retry, bury, extend a claim, and wait for new work.
 */
import { Cause, Deferred, Duration, Effect, type Exit, Schedule } from "effect"
import { isLastDelivery, type QueueError, type QueueMessage, type QueueName } from "./Queue.ts"

export interface QueueDriver {
  /** Claims up to `max` visible messages of the queue for this consumer (may return none). */
  readonly claim: (max: number) => Effect.Effect<ReadonlyArray<QueueMessage>, QueueError>
  readonly ack: (message: QueueMessage) => Effect.Effect<void, QueueError>
  /** Leaves the message for another delivery after the retry delay. */
  readonly retry: (message: QueueMessage, error: string) => Effect.Effect<void, QueueError>
  /** Moves the message to the dead-letter queue with its last error. */
  readonly bury: (message: QueueMessage, error: string) => Effect.Effect<void, QueueError>
  /** Keeps the claims of the messages still being handled from timing out (one call for all). */
  readonly heartbeat: (messages: ReadonlyArray<QueueMessage>) => Effect.Effect<void, QueueError>
  /**
   * How long a claimed message may go without a heartbeat before the backend hands it to
   * another consumer: the visibility timeout, or less where failed and abandoned messages are
   * found the same way (Redis reclaims anything idle past the retry delay). Heartbeats come
   * three times as often.
   */
  readonly reclaimAfter: Duration.Duration
  /**
   * Waits until new work may be there (a notification, a poll interval, a blocking read) and
   * returns what it claimed meanwhile, at most `max` (often nothing: the next claim takes it).
   */
  readonly waitForWork: (max: number) => Effect.Effect<ReadonlyArray<QueueMessage>, QueueError>
}

/** The error text kept with a failed message: the first lines of the cause, bounded. */
export const describeFailure = (cause: Cause.Cause<unknown>): string => Cause.pretty(cause).slice(0, 2000)

/**
 * Runs `handler` over the messages `driver` claims, at most `concurrency` at once, until
 * interrupted. One loop heartbeats every message in flight every third of the driver's
 * `reclaimAfter` (a fiber per message cost a tenth of the throughput).
 */
export const runConsumer = <E, R>(
  queue: QueueName,
  driver: QueueDriver,
  handler: (message: QueueMessage) => Effect.Effect<void, E, R>,
  concurrency: number
): Effect.Effect<never, QueueError, R> =>
  Effect.gen(function* () {
    let free = concurrency
    // Completed when a slot frees up while the claim loop waits for one.
    let slotFreed: Deferred.Deferred<void> | undefined
    const releaseSlot = Effect.sync(() => {
      free++
      if (slotFreed !== undefined) {
        Deferred.doneUnsafe(slotFreed, Effect.void)
        slotFreed = undefined
      }
    })
    const heartbeatEvery = Duration.max(Duration.millis(10), Duration.divideUnsafe(driver.reclaimAfter, 3))

    const inFlight = new Map<string, QueueMessage>()
    yield* Effect.suspend(() => (inFlight.size === 0 ? Effect.void : driver.heartbeat([...inFlight.values()]))).pipe(
      Effect.ignore,
      Effect.repeat(Schedule.spaced(heartbeatEvery)),
      Effect.forkChild
    )

    // What one delivery's outcome leaves to do: ack, nothing (interrupted), retry or bury.
    const settle = (message: QueueMessage, exit: Exit.Exit<void, E>): Effect.Effect<void, QueueError> => {
      inFlight.delete(message.id)
      if (exit._tag === "Success") return driver.ack(message)
      // Interrupted (shutdown, killed consumer): not a failure; the claim times out and the
      // message is delivered again.
      if (Cause.hasInterruptsOnly(exit.cause)) return Effect.void
      const error = describeFailure(exit.cause)
      if (isLastDelivery(message, exit.cause)) {
        return Effect.logWarning("queue_message_dead_lettered").pipe(
          Effect.annotateLogs({ queue, message_id: message.id, deliveries: message.deliveries }),
          Effect.andThen(driver.bury(message, error))
        )
      }
      return driver.retry(message, error)
    }

    // A plain pipeline rather than a generator per message: this runs once for every message.
    const handle = (message: QueueMessage) =>
      Effect.suspend(() => {
        inFlight.set(message.id, message)
        return Effect.exit(handler(message))
      }).pipe(
        Effect.flatMap((exit) => settle(message, exit)),
        // An ack/retry/bury that failed leaves the message to time out and come back; log it.
        // Interruption (the consumer is stopping) is not a failure and must not be swallowed.
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause)
            ? Effect.failCause(cause)
            : Effect.logError("queue_handler_bookkeeping_failed").pipe(
                Effect.annotateLogs({ queue, message_id: message.id, error: describeFailure(cause) })
              )
        ),
        Effect.ensuring(releaseSlot)
      )

    while (true) {
      if (free === 0) {
        // Never claim what cannot be handled now: wait for a handler to finish.
        slotFreed = Deferred.makeUnsafe<void>()
        yield* Deferred.await(slotFreed)
        continue
      }
      let messages = yield* driver.claim(free)
      if (messages.length === 0) messages = yield* driver.waitForWork(free)
      free -= messages.length
      for (const message of messages) yield* Effect.forkChild(handle(message))
    }
  })
