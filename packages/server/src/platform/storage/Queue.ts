/**
 * The queue port (docs/interface.md: What the service does 4; Events 4-5; Limits): `bosun-inbox`,
 * `bosun-effects` and `bosun-review-batches`, each with a `-dlq`. A message is a wake-up carrying
 * ids only (the rows it points at live in Postgres); it is sent after the transaction that wrote
 * the row commits.
 *
 * Delivery is at least once. A handler that succeeds acks its message; one that fails (a typed
 * error or a defect) leaves it to be redelivered after the retry delay; after `MAX_DELIVERIES`
 * (5) failed deliveries it moves to the queue's dead-letter queue with the last error and the
 * delivery count — at once when the handler fails with an error marked `unretryable` (another
 * delivery would fail the same way; an operator's replay after a fix may not). A consumer that dies mid-message loses nothing: the message becomes visible
 * again once its visibility timeout passes without a heartbeat. Handlers must be idempotent.
 *
 * Adapters: `QueueRedis.ts` (Redis Streams) and `QueuePostgres.ts` (the embedded default), both
 * built on the consumer engine in `QueueConsumer.ts` and held to one conformance suite.
 */
import { type Cause, Context, Data, type Duration, type Effect, type Scope } from "effect"

export const QUEUE_NAMES = ["bosun-inbox", "bosun-effects", "bosun-review-batches"] as const
export type QueueName = (typeof QUEUE_NAMES)[number]

/** Deliveries after which a failing message goes to the dead-letter queue (docs/interface.md: Limits). */
export const MAX_DELIVERIES = 5

/**
 * A handler's failure that another delivery would only repeat (a provider refusing the request):
 * its message goes to the dead-letter queue at once.
 */
export interface Unretryable {
  readonly unretryable: true
}

/** Whether a failed delivery's cause says not to deliver it again. */
export const isUnretryable = (cause: Cause.Cause<unknown>) =>
  cause.reasons.some(
    (reason) =>
      reason._tag === "Fail" &&
      typeof reason.error === "object" &&
      reason.error !== null &&
      "unretryable" in reason.error &&
      reason.error.unretryable === true
  )

/** Whether this failed delivery is its message's last: the queue dead-letters it. */
export const isLastDelivery = (message: { readonly deliveries: number }, cause: Cause.Cause<unknown>) =>
  message.deliveries >= MAX_DELIVERIES || isUnretryable(cause)

export const deadLetterQueueOf = (queue: QueueName) => `${queue}-dlq` as const

export class QueueError extends Data.TaggedError("QueueError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export const queueFailure = (what: string) => (cause: unknown) =>
  cause instanceof QueueError
    ? cause
    : new QueueError({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })

export interface QueueMessage {
  readonly id: string
  readonly queue: QueueName
  readonly body: string
  /** 1 on the first delivery. */
  readonly deliveries: number
}

export interface DeadLetter {
  readonly id: string
  readonly queue: QueueName
  readonly body: string
  readonly deliveries: number
  readonly lastError: string
  readonly failedAt: Date
}

export interface ConsumeOptions {
  /** Messages handled at once by this consumer (default 8). */
  readonly concurrency?: number | undefined
}

export interface QueuesShape {
  /** Enqueues `body`; returns the message id. */
  readonly send: (queue: QueueName, body: string) => Effect.Effect<string, QueueError>
  /**
   * Handles messages of `queue` until the returned effect is interrupted. Several consumers (in
   * one process or many) share a queue; each message goes to one of them at a time.
   */
  readonly consume: <E, R>(
    queue: QueueName,
    handler: (message: QueueMessage) => Effect.Effect<void, E, R>,
    options?: ConsumeOptions
  ) => Effect.Effect<never, QueueError, R | Scope.Scope>
  /**
   * How many messages of `queue` are not yet handled: waiting, or delivered and not yet acked
   * (the `/metrics` queue depth). Dead letters are not counted; `deadLetters.count` has them.
   */
  readonly depth: (queue: QueueName) => Effect.Effect<number, QueueError>
  /** The operator's view of a dead-letter queue. */
  readonly deadLetters: {
    readonly list: (queue: QueueName, limit?: number) => Effect.Effect<ReadonlyArray<DeadLetter>, QueueError>
    readonly count: (queue: QueueName) => Effect.Effect<number, QueueError>
    /** Moves dead letters (all, or those with `ids`) back to `queue` with a fresh delivery count. */
    readonly replay: (queue: QueueName, ids?: ReadonlyArray<string>) => Effect.Effect<number, QueueError>
  }
}

export class Queues extends Context.Service<Queues, QueuesShape>()("bosun/server/storage/Queues") {}

export interface QueueSettings {
  /** A claimed message not heartbeated for this long is delivered again (a dead consumer's). */
  readonly visibilityTimeout: Duration.Duration
  /** How long a failed message waits before its next delivery. */
  readonly retryDelay: Duration.Duration
}
