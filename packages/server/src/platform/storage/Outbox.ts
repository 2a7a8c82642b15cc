/**
 * The transactional outbox (docs/interface.md: Design rules; Events 4). A change that needs a side
 * effect writes an outbox row in its own transaction (`write`); after the commit the row's
 * wake-up goes to its queue (`transaction` does this). A relay re-sends the wake-up of any row
 * whose send was lost (a crash between commit and send): rows never sent and older than the
 * grace period, and rows sent long ago but still not done (a queue that lost its message).
 *
 * Delivery is at least once; a consumer uses `handle`, which skips a row already done and marks
 * it done after the work succeeds, so a duplicate wake-up does no work twice once a row is done.
 * The relay locks the rows it sends (`FOR UPDATE SKIP LOCKED`), so several servers do not send
 * the same row at once.
 *
 * A row whose work failed on the wake-up's last delivery (the queue dead-letters it) is marked
 * `dead_lettered_at`, and the relay leaves it alone: only an operator's replay of the dead letter
 * brings it back (its first handling clears the mark), so a failing effect does not go round once
 * per resend period for ever.
 */
import { Cause, Context, Data, Duration, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { isLastDelivery, type QueueMessage, type QueueName, Queues } from "./Queue.ts"

export class OutboxError extends Data.TaggedError("OutboxError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

const failure = (what: string) => (cause: unknown) =>
  new OutboxError({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })

export interface OutboxRow {
  readonly id: string
  readonly queue: QueueName
  readonly kind: string
  readonly payload: unknown
}

/** The wake-up a queue carries: ids only. */
export const WakeUp = Schema.Struct({ outbox_id: Schema.String, kind: Schema.String })
const encodeWakeUp = (row: { readonly id: string; readonly kind: string }) =>
  JSON.stringify({ outbox_id: row.id, kind: row.kind })
const decodeWakeUp = Schema.decodeUnknownEffect(Schema.fromJsonString(WakeUp))

export interface OutboxSettings {
  /** How often the relay looks for lost wake-ups. */
  readonly relayInterval: Duration.Duration
  /** A row never sent is relayed once it is this old (its own transaction normally sends it first). */
  readonly grace: Duration.Duration
  /** A row sent this long ago and still not done is sent again. */
  readonly resendAfter: Duration.Duration
  /** The relay starts once this succeeds (the server passes "migrations applied"). */
  readonly ready?: Effect.Effect<void> | undefined
}

/** Rows written in the current `transaction`, sent once it commits. */
class PendingWakeUps extends Context.Service<PendingWakeUps, Array<{ id: string; queue: QueueName; kind: string }>>()(
  "bosun/server/storage/Outbox/PendingWakeUps"
) {}

export class Outbox extends Context.Service<
  Outbox,
  {
    /** Writes a row in the caller's transaction; its wake-up is sent when `transaction` commits. */
    readonly write: (queue: QueueName, kind: string, payload: unknown) => Effect.Effect<string, OutboxError>
    /** Runs `effect` in a SQL transaction and sends the wake-ups of the rows it wrote after commit. */
    readonly transaction: <A, E, R>(
      effect: Effect.Effect<A, E, R>
    ) => Effect.Effect<A, E | OutboxError, Exclude<R, PendingWakeUps>>
    /**
     * Handles the row a wake-up points at: skips it when done (or gone), else runs `work` and
     * marks it done. A failure of `work` leaves the row undone for the queue to redeliver.
     */
    readonly handle: <E, R>(
      message: QueueMessage,
      work: (row: OutboxRow) => Effect.Effect<void, E, R>
    ) => Effect.Effect<void, E | OutboxError, R>
    /** One relay pass; returns how many wake-ups it sent. */
    readonly relayOnce: Effect.Effect<number, OutboxError>
  }
>()("bosun/server/storage/Outbox") {
  /** The outbox and its relay loop (every `relayInterval`, for the life of the layer). */
  static readonly layer = (settings: OutboxSettings) =>
    Layer.effect(
      Outbox,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const queues = yield* Queues
        const graceMs = Duration.toMillis(settings.grace)
        const resendMs = Duration.toMillis(settings.resendAfter)

        const write = Effect.fn("Outbox.write")(function* (queue: QueueName, kind: string, payload: unknown) {
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO outbox (queue, kind, payload) VALUES (${queue}, ${kind}, ${JSON.stringify(payload ?? {})}::jsonb)
            RETURNING id::text AS id`.pipe(Effect.mapError(failure("write outbox row")))
          const id = row?.id ?? ""
          const pending = yield* Effect.serviceOption(PendingWakeUps)
          if (Option.isSome(pending)) pending.value.push({ id, queue, kind })
          return id
        })

        const markSent = (ids: ReadonlyArray<string>) =>
          ids.length === 0
            ? Effect.void
            : sql`UPDATE outbox SET enqueued_at = now() WHERE id = ANY(${ids.map(Number)}::bigint[])`.pipe(
                Effect.asVoid,
                Effect.mapError(failure("mark outbox rows sent"))
              )

        const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
          Effect.gen(function* () {
            const pending: Array<{ id: string; queue: QueueName; kind: string }> = []
            const result = yield* sql
              .withTransaction(Effect.provideService(effect, PendingWakeUps, pending))
              .pipe(
                Effect.catchTag("SqlError", (cause) => Effect.fail(failure("outbox transaction")(cause)))
              ) as Effect.Effect<A, E | OutboxError, Exclude<R, PendingWakeUps>>
            // Committed. A send lost here (crash, queue down) is the relay's to repeat.
            yield* Effect.forEach(pending, (row) => queues.send(row.queue, encodeWakeUp(row)), { discard: true }).pipe(
              Effect.andThen(markSent(pending.map((row) => row.id))),
              Effect.catch((error) =>
                Effect.logWarning("outbox_send_deferred_to_relay").pipe(
                  Effect.annotateLogs({ rows: pending.length, error: error.message })
                )
              )
            )
            return result
          })

        const handle = <E, R>(message: QueueMessage, work: (row: OutboxRow) => Effect.Effect<void, E, R>) =>
          Effect.gen(function* () {
            const wakeUp = yield* decodeWakeUp(message.body).pipe(
              Effect.mapError(() => new OutboxError({ message: "the message is not an outbox wake-up" }))
            )
            const [row] = yield* sql<{
              id: string
              queue: QueueName
              kind: string
              payload: unknown
              done: boolean
              dead: boolean
            }>`
              SELECT id::text AS id, queue, kind, payload, done_at IS NOT NULL AS done,
                     dead_lettered_at IS NOT NULL AS dead
              FROM outbox WHERE id = ${Number(wakeUp.outbox_id)}`.pipe(Effect.mapError(failure("read outbox row")))
            if (row === undefined || row.done) return
            if (row.dead) {
              // A replayed dead letter: the relay may send it again should this wake-up be lost.
              yield* sql`UPDATE outbox SET dead_lettered_at = NULL, enqueued_at = now() WHERE id = ${Number(row.id)}`.pipe(
                Effect.mapError(failure("clear the dead-letter mark"))
              )
            }
            yield* work({ id: row.id, queue: row.queue, kind: row.kind, payload: row.payload }).pipe(
              Effect.onError((cause) =>
                !isLastDelivery(message, cause) || Cause.hasInterruptsOnly(cause)
                  ? Effect.void
                  : sql`UPDATE outbox SET dead_lettered_at = now() WHERE id = ${Number(row.id)}`.pipe(
                      Effect.catch((error) =>
                        Effect.logWarning("outbox_dead_letter_mark_failed").pipe(
                          Effect.annotateLogs({ outbox_id: row.id, error: error.message })
                        )
                      ),
                      Effect.asVoid
                    )
              )
            )
            yield* sql`UPDATE outbox SET done_at = now() WHERE id = ${Number(row.id)} AND done_at IS NULL`.pipe(
              Effect.mapError(failure("mark outbox row done"))
            )
          })

        const relayOnce = sql
          .withTransaction(
            Effect.gen(function* () {
              const rows = yield* sql<{ id: string; queue: QueueName; kind: string }>`
                SELECT id::text AS id, queue, kind FROM outbox
                WHERE done_at IS NULL AND dead_lettered_at IS NULL
                  AND ((enqueued_at IS NULL AND created_at < now() - make_interval(secs => ${graceMs / 1000}))
                    OR enqueued_at < now() - make_interval(secs => ${resendMs / 1000}))
                ORDER BY id LIMIT 500
                FOR UPDATE SKIP LOCKED`
              for (const row of rows) yield* queues.send(row.queue, encodeWakeUp(row))
              yield* markSent(rows.map((row) => row.id))
              return rows.length
            })
          )
          .pipe(
            Effect.mapError((cause) => (cause instanceof OutboxError ? cause : failure("relay")(cause))),
            Effect.withSpan("Outbox.relayOnce")
          )

        yield* (settings.ready ?? Effect.void).pipe(
          Effect.andThen(relayOnce),
          Effect.tap((sent) =>
            sent > 0 ? Effect.logInfo("outbox_relayed").pipe(Effect.annotateLogs({ rows: sent })) : Effect.void
          ),
          Effect.catch((error) =>
            Effect.logWarning("outbox_relay_failed").pipe(Effect.annotateLogs({ error: error.message }))
          ),
          Effect.andThen(Effect.sleep(settings.relayInterval)),
          Effect.forever,
          Effect.forkScoped
        )

        return Outbox.of({ write, transaction, handle, relayOnce })
      })
    )
}
