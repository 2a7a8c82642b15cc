/**
 * Postgres queue adapter, the embedded default: rows of `queue_messages`. A consumer claims rows
 * with `FOR UPDATE SKIP LOCKED` and pushes their `visible_at` one visibility timeout ahead
 * (heartbeats push it again); a failed row is made visible again after the retry delay; a dead
 * letter is the same row moved to `<queue>-dlq`. `send` notifies the `bosun_queue` channel so
 * idle consumers wake at once; they also poll, which covers a lost notification.
 */
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Queue as EffectQueue, Layer } from "effect"
import {
  type ConsumeOptions,
  type DeadLetter,
  deadLetterQueueOf,
  type QueueMessage,
  type QueueName,
  type QueueSettings,
  Queues,
  queueFailure
} from "./Queue.ts"
import { type QueueDriver, runConsumer } from "./QueueConsumer.ts"

const CHANNEL = "bosun_queue"

interface Row {
  readonly id: string
  readonly body: string
  readonly deliveries: number
}

interface DeadRow extends Row {
  readonly last_error: string | null
  readonly failed_at: Date | null
}

export const makePostgresQueues = Effect.fn("Queues.makePostgres")(function* (
  settings: QueueSettings & { readonly pollInterval: Duration.Duration }
) {
  const sql = yield* PgClient.PgClient
  const visibilityMs = Duration.toMillis(settings.visibilityTimeout)
  const retryMs = Duration.toMillis(settings.retryDelay)

  const send = Effect.fn("Queues.send")(
    function* (queue: QueueName, body: string) {
      const [row] = yield* sql<{ id: string }>`
      INSERT INTO queue_messages (queue, body) VALUES (${queue}, ${body}) RETURNING id::text AS id`
      yield* sql`SELECT pg_notify(${CHANNEL}, ${queue})`
      return row?.id ?? ""
    },
    Effect.mapError(queueFailure("send"))
  )

  const driverFor = (queue: QueueName, wake: Effect.Effect<void>): QueueDriver => ({
    claim: (max) =>
      sql<Row>`
        UPDATE queue_messages SET deliveries = deliveries + 1,
               visible_at = now() + make_interval(secs => ${visibilityMs / 1000})
        WHERE id IN (
          SELECT id FROM queue_messages
          WHERE queue = ${queue} AND visible_at <= now()
          ORDER BY id LIMIT ${max} FOR UPDATE SKIP LOCKED)
        RETURNING id::text AS id, body, deliveries`.pipe(
        Effect.map((rows) =>
          rows
            .map((r): QueueMessage => ({ id: r.id, queue, body: r.body, deliveries: r.deliveries }))
            .sort((a, b) => Number(a.id) - Number(b.id))
        ),
        Effect.mapError(queueFailure("claim"))
      ),
    ack: (message) =>
      sql`DELETE FROM queue_messages WHERE id = ${message.id} AND queue = ${queue}`.pipe(
        Effect.asVoid,
        Effect.mapError(queueFailure("ack"))
      ),
    retry: (message, error) =>
      sql`UPDATE queue_messages
          SET visible_at = now() + make_interval(secs => ${retryMs / 1000}), last_error = ${error}
          WHERE id = ${message.id} AND queue = ${queue}`.pipe(Effect.asVoid, Effect.mapError(queueFailure("retry"))),
    bury: (message, error) =>
      sql`UPDATE queue_messages
          SET queue = ${deadLetterQueueOf(queue)}, last_error = ${error}, failed_at = now()
          WHERE id = ${message.id} AND queue = ${queue}`.pipe(Effect.asVoid, Effect.mapError(queueFailure("bury"))),
    reclaimAfter: settings.visibilityTimeout,
    heartbeat: (messages) =>
      sql`UPDATE queue_messages SET visible_at = now() + make_interval(secs => ${visibilityMs / 1000})
          WHERE id = ANY(${messages.map((m) => Number(m.id))}::bigint[]) AND queue = ${queue}`.pipe(
        Effect.asVoid,
        Effect.mapError(queueFailure("heartbeat"))
      ),
    waitForWork: () => Effect.as(wake, [])
  })

  const consume = <E, R>(
    queue: QueueName,
    handler: (message: QueueMessage) => Effect.Effect<void, E, R>,
    options?: ConsumeOptions
  ) =>
    Effect.gen(function* () {
      const notifications = yield* sql.listen(CHANNEL).pipe(Effect.mapError(queueFailure("listen")))
      // Wake on a notification for this queue, or after the poll interval, whichever comes first.
      const wake = EffectQueue.take(notifications).pipe(
        Effect.repeat({ until: (n) => n.payload === queue }),
        Effect.timeoutOption(settings.pollInterval),
        Effect.catch(() => Effect.sleep(settings.pollInterval)),
        Effect.asVoid
      )
      return yield* runConsumer(queue, driverFor(queue, wake), handler, options?.concurrency ?? 8)
    })

  const list = Effect.fn("Queues.deadLetters.list")(
    function* (queue: QueueName, limit = 100) {
      const rows = yield* sql<DeadRow>`
      SELECT id::text AS id, body, deliveries, last_error, failed_at FROM queue_messages
      WHERE queue = ${deadLetterQueueOf(queue)} ORDER BY id LIMIT ${limit}`
      return rows.map(
        (r): DeadLetter => ({
          id: r.id,
          queue,
          body: r.body,
          deliveries: r.deliveries,
          lastError: r.last_error ?? "",
          failedAt: r.failed_at ?? new Date(0)
        })
      )
    },
    Effect.mapError(queueFailure("list dead letters"))
  )

  const depth = Effect.fn("Queues.depth")(
    function* (queue: QueueName) {
      const [row] = yield* sql<{ n: number }>`
      SELECT count(*)::int AS n FROM queue_messages WHERE queue = ${queue}`
      return row?.n ?? 0
    },
    Effect.mapError(queueFailure("count queued messages"))
  )

  const count = Effect.fn("Queues.deadLetters.count")(
    function* (queue: QueueName) {
      const [row] = yield* sql<{ n: number }>`
      SELECT count(*)::int AS n FROM queue_messages WHERE queue = ${deadLetterQueueOf(queue)}`
      return row?.n ?? 0
    },
    Effect.mapError(queueFailure("count dead letters"))
  )

  const replay = Effect.fn("Queues.deadLetters.replay")(
    function* (queue: QueueName, ids?: ReadonlyArray<string>) {
      const dlq = deadLetterQueueOf(queue)
      const rows =
        ids === undefined
          ? yield* sql<{ id: string }>`
            UPDATE queue_messages SET queue = ${queue}, deliveries = 0, visible_at = now(), last_error = NULL, failed_at = NULL
            WHERE queue = ${dlq} RETURNING id::text AS id`
          : yield* sql<{ id: string }>`
            UPDATE queue_messages SET queue = ${queue}, deliveries = 0, visible_at = now(), last_error = NULL, failed_at = NULL
            WHERE queue = ${dlq} AND id = ANY(${ids.map(Number)}::bigint[]) RETURNING id::text AS id`
      if (rows.length > 0) yield* sql`SELECT pg_notify(${CHANNEL}, ${queue})`
      return rows.length
    },
    Effect.mapError(queueFailure("replay dead letters"))
  )

  return Queues.of({ send, consume, depth, deadLetters: { list, count, replay } })
})

export const layerPostgres = (settings: QueueSettings & { readonly pollInterval: Duration.Duration }) =>
  Layer.effect(Queues, makePostgresQueues(settings))
