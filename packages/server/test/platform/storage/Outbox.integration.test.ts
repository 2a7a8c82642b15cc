/**
 * The transactional outbox over real Postgres (and the Postgres queue adapter): wake-ups go out
 * after commit and never for a rolled-back row; a lost send is relayed within the relay period;
 * a row already done is never worked twice; a row whose wake-up was dead-lettered is left alone
 * by the relay until an operator replays it.
 */
import { eventually, TestDatabase } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { runMigrations } from "../../../src/platform/db/Migrator.ts"
import { Outbox, type OutboxRow } from "../../../src/platform/storage/Outbox.ts"
import { Queues } from "../../../src/platform/storage/Queue.ts"
import { layerPostgres } from "../../../src/platform/storage/QueuePostgres.ts"
import { migrationsDir } from "../../support/TestServer.ts"

const settings = { relayInterval: Duration.millis(200), grace: Duration.seconds(1), resendAfter: Duration.minutes(15) }
const queueSettings = {
  visibilityTimeout: Duration.millis(400),
  retryDelay: Duration.millis(100),
  pollInterval: Duration.millis(50)
}

const Stack = Outbox.layer(settings).pipe(
  Layer.provideMerge(layerPostgres(queueSettings)),
  Layer.provideMerge(Layer.effectDiscard(runMigrations(migrationsDir))),
  Layer.provideMerge(TestDatabase.layer)
)

const rowState = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ sent: boolean; done: boolean }>`
      SELECT enqueued_at IS NOT NULL AS sent, done_at IS NOT NULL AS done FROM outbox WHERE id = ${Number(id)}`.pipe(
      Effect.map((rows) => rows[0]),
      Effect.orDie
    )
  )

layer(Stack, { excludeTestServices: true, timeout: "60 seconds" })("Outbox", (it) => {
  it.effect("sends the wake-up right after commit; the consumer works the row once and marks it done", () =>
    Effect.gen(function* () {
      const outbox = yield* Outbox
      const queues = yield* Queues
      const worked: Array<OutboxRow> = []
      yield* Effect.forkScoped(
        queues.consume("bosun-effects", (m) => outbox.handle(m, (row) => Effect.sync(() => void worked.push(row))))
      )
      const id = yield* outbox.transaction(outbox.write("bosun-effects", "github.review.publish", { review_id: "r-1" }))
      // Sent by the time the transaction returns; done may already be true (the consumer is quick).
      assert.strictEqual((yield* rowState(id))?.sent, true)
      yield* Effect.orDie(
        eventually(
          Effect.sync(() => worked.length),
          (n) => n === 1
        )
      )
      assert.deepStrictEqual(worked[0], {
        id,
        queue: "bosun-effects",
        kind: "github.review.publish",
        payload: { review_id: "r-1" }
      })
      yield* Effect.orDie(eventually(rowState(id), (s) => s?.done === true))
    })
  )

  it.effect("writes nothing and sends nothing when the transaction rolls back", () =>
    Effect.gen(function* () {
      const outbox = yield* Outbox
      const sql = yield* SqlClient.SqlClient
      const before = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox`.pipe(Effect.orDie)
      const error = yield* Effect.flip(
        outbox.transaction(
          Effect.gen(function* () {
            yield* outbox.write("bosun-inbox", "slack.event", { event_id: "Ev1" })
            return yield* Effect.fail("validation failed" as const)
          })
        )
      )
      assert.strictEqual(error, "validation failed")
      const after = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox`.pipe(Effect.orDie)
      assert.deepStrictEqual(after, before)
      const messages = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM queue_messages WHERE queue = 'bosun-inbox'`.pipe(Effect.orDie)
      assert.strictEqual(messages[0]?.n, 0)
    })
  )

  it.effect("relays a row whose wake-up was never sent (a crash after commit) within the relay period", () =>
    Effect.gen(function* () {
      const outbox = yield* Outbox
      const queues = yield* Queues
      const sql = yield* SqlClient.SqlClient
      const worked: Array<string> = []
      yield* Effect.forkScoped(
        queues.consume("bosun-review-batches", (m) =>
          outbox.handle(m, (row) => Effect.sync(() => void worked.push(row.id)))
        )
      )
      // A plain transaction: the row commits but no wake-up is sent, as if the process died here.
      const written = Date.now()
      const id = yield* sql.withTransaction(outbox.write("bosun-review-batches", "review.batch", { batch_id: "b-1" }))
      assert.deepStrictEqual(yield* rowState(id), { sent: false, done: false })
      yield* Effect.orDie(
        eventually(
          Effect.sync(() => worked.length),
          (n) => n === 1
        )
      )
      const elapsed = Date.now() - written
      // grace (1 s) + one relay period (200 ms) + delivery, with room for a loaded machine.
      assert.isBelow(elapsed, 4_000)
      assert.deepStrictEqual(worked, [id])
      // The handler ran; the row is marked done right after it returns.
      assert.deepStrictEqual(yield* Effect.orDie(eventually(rowState(id), (state) => state?.done === true)), {
        sent: true,
        done: true
      })
    })
  )

  it.effect("does no work for a duplicate wake-up of a row already done, and never relays done rows", () =>
    Effect.gen(function* () {
      const outbox = yield* Outbox
      const queues = yield* Queues
      let work = 0
      yield* Effect.forkScoped(
        queues.consume("bosun-inbox", (m) =>
          outbox.handle(m, () =>
            Effect.sync(() => {
              work++
            })
          )
        )
      )
      const id = yield* outbox.transaction(outbox.write("bosun-inbox", "linear.delivery", { delivery_id: "L-1" }))
      yield* Effect.orDie(eventually(rowState(id), (s) => s?.done === true))
      yield* queues.send("bosun-inbox", JSON.stringify({ outbox_id: id, kind: "linear.delivery" }))
      yield* queues.send("bosun-inbox", "not an outbox wake-up")
      const dead = yield* Effect.orDie(eventually(queues.deadLetters.count("bosun-inbox"), (n) => n === 1))
      assert.strictEqual(dead, 1)
      assert.strictEqual(work, 1)
      assert.strictEqual(yield* outbox.relayOnce, 0)
    })
  )

  it.effect(
    "a row whose work fails every delivery is dead-lettered, never relayed again, and worked once when replayed",
    () =>
      Effect.gen(function* () {
        const outbox = yield* Outbox
        const queues = yield* Queues
        const sql = yield* SqlClient.SqlClient
        let failing = true
        let attempts = 0
        const worked: Array<string> = []
        yield* Effect.forkScoped(
          queues.consume("bosun-effects", (m) =>
            outbox.handle(m, (row) =>
              Effect.suspend(() => {
                attempts++
                return failing
                  ? Effect.fail(new Error("the provider answered 500"))
                  : Effect.sync(() => void worked.push(row.id))
              })
            )
          )
        )
        const id = yield* outbox.transaction(outbox.write("bosun-effects", "slack.message", { key: "k-dead" }))
        yield* Effect.orDie(eventually(queues.deadLetters.count("bosun-effects"), (n) => n === 1))
        assert.strictEqual(attempts, 5)
        const [letter] = yield* queues.deadLetters.list("bosun-effects")
        assert.include(letter?.lastError ?? "", "the provider answered 500")
        const marked = yield* sql<{ dead: boolean }>`
        SELECT dead_lettered_at IS NOT NULL AS dead FROM outbox WHERE id = ${Number(id)}`.pipe(Effect.orDie)
        assert.deepStrictEqual(marked, [{ dead: true }])
        // Long past the resend period: an undone row would be relayed now; a dead-lettered one is not.
        yield* sql`UPDATE outbox SET enqueued_at = now() - interval '1 hour' WHERE id = ${Number(id)}`.pipe(
          Effect.orDie
        )
        assert.strictEqual(yield* outbox.relayOnce, 0)
        assert.strictEqual(attempts, 5)

        failing = false
        assert.strictEqual(yield* queues.deadLetters.replay("bosun-effects"), 1)
        yield* Effect.orDie(eventually(rowState(id), (state) => state?.done === true))
        assert.deepStrictEqual(worked, [id])
        const cleared = yield* sql<{ dead: boolean }>`
        SELECT dead_lettered_at IS NOT NULL AS dead FROM outbox WHERE id = ${Number(id)}`.pipe(Effect.orDie)
        assert.deepStrictEqual(cleared, [{ dead: false }])
        assert.strictEqual(yield* queues.deadLetters.count("bosun-effects"), 0)
      })
  )
})
