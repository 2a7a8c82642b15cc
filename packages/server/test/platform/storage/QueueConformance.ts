/**
 * What every queue adapter must do (docs/interface.md: Events 4-5; Limits): deliver, retry with
 * a counted delivery, dead-letter after exactly five failed deliveries while other messages keep
 * flowing, redeliver what a killed consumer held, bound concurrency, and lose nothing under many
 * producers and consumers. The suite needs a `SqlClient` for its exactly-once ledger.
 */
import { eventually } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, type Layer } from "effect"
import { SqlClient } from "effect/sql"
import { MAX_DELIVERIES, type QueueMessage, type QueueName, Queues } from "../../../src/platform/storage/Queue.ts"

/**
 * The timings every adapter runs the suite with. The visibility timeout leaves room for a test
 * process starved of CPU for a second (CI runs several heavy files at once on two cores): a
 * shorter one let a healthy consumer's message be reclaimed and handled twice.
 */
export const testQueueSettings = {
  visibilityTimeout: Duration.millis(1500),
  retryDelay: Duration.millis(100),
  pollInterval: Duration.millis(100)
}

const consumeInBackground = <E>(
  queue: QueueName,
  handler: (m: QueueMessage) => Effect.Effect<void, E>,
  concurrency = 4
) => Effect.flatMap(Queues, (queues) => Effect.forkScoped(queues.consume(queue, handler, { concurrency })))

const waitFor = <A>(effect: Effect.Effect<A>, done: (a: A) => boolean) =>
  Effect.orDie(eventually(effect, done, Duration.seconds(30)))

export const queueConformance = <E>(name: string, queues: Layer.Layer<Queues | SqlClient.SqlClient, E>) =>
  layer(queues, { excludeTestServices: true, timeout: "180 seconds" })(`Queue conformance: ${name}`, (it) => {
    it.effect("delivers a message once, with delivery count 1, and acks it", () =>
      Effect.gen(function* () {
        const queues = yield* Queues
        const seen: Array<QueueMessage> = []
        yield* consumeInBackground("bosun-inbox", (m) => Effect.sync(() => void seen.push(m)))
        const id = yield* queues.send("bosun-inbox", JSON.stringify({ delivery_id: "d-1" }))
        assert.isString(id)
        assert.isAbove(id.length, 0)
        yield* waitFor(
          Effect.sync(() => seen.length),
          (n) => n === 1
        )
        yield* queues.send("bosun-inbox", "second")
        yield* waitFor(
          Effect.sync(() => seen.length),
          (n) => n === 2
        )
        assert.deepStrictEqual(
          seen.map((m) => [m.queue, m.body, m.deliveries]),
          [
            ["bosun-inbox", '{"delivery_id":"d-1"}', 1],
            ["bosun-inbox", "second", 1]
          ]
        )
        assert.strictEqual(seen[0]?.id, id)
        assert.strictEqual(yield* queues.deadLetters.count("bosun-inbox"), 0)
      })
    )

    it.effect("redelivers a message whose handler failed or died, counting deliveries, until it succeeds", () =>
      Effect.gen(function* () {
        const queues = yield* Queues
        const deliveries: Array<number> = []
        yield* consumeInBackground("bosun-effects", (m) =>
          Effect.suspend(() => {
            deliveries.push(m.deliveries)
            if (m.deliveries === 1) return Effect.fail("transient" as const)
            if (m.deliveries === 2) return Effect.die(new Error("bug, then fixed"))
            return Effect.void
          })
        )
        yield* queues.send("bosun-effects", "effect-1")
        yield* waitFor(
          Effect.sync(() => deliveries.length),
          (n) => n === 3
        )
        assert.deepStrictEqual(deliveries, [1, 2, 3])
        assert.strictEqual(yield* queues.deadLetters.count("bosun-effects"), 0)
      })
    )

    it.effect("depth counts messages waiting or in hand, not handled ones nor dead letters", () =>
      Effect.gen(function* () {
        const queues = yield* Queues
        assert.strictEqual(yield* queues.depth("bosun-effects"), 0)
        for (let i = 0; i < 3; i++) yield* queues.send("bosun-effects", `waiting-${i}`)
        assert.strictEqual(yield* queues.depth("bosun-effects"), 3)
        assert.strictEqual(yield* queues.depth("bosun-inbox"), 0, "another queue's messages are not counted")
        const started = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const handled: Array<string> = []
        yield* consumeInBackground(
          "bosun-effects",
          (m) =>
            m.body === "waiting-0"
              ? Deferred.succeed(started, undefined).pipe(
                  Effect.andThen(Deferred.await(release)),
                  Effect.andThen(Effect.sync(() => void handled.push(m.body)))
                )
              : Effect.sync(() => void handled.push(m.body)),
          1
        )
        // The first is in its handler's hands (delivered, not acked) and the others wait behind it:
        // all three are still counted.
        yield* Deferred.await(started)
        assert.strictEqual(yield* queues.depth("bosun-effects"), 3)
        assert.deepStrictEqual(handled, [])
        yield* Deferred.succeed(release, undefined)
        yield* waitFor(queues.depth("bosun-effects").pipe(Effect.orDie), (n) => n === 0)
        assert.deepStrictEqual([...handled].sort(), ["waiting-0", "waiting-1", "waiting-2"])
      })
    )

    it.effect(
      "moves a poison message to the -dlq after exactly 5 deliveries while others keep flowing; replay brings it back",
      () =>
        Effect.gen(function* () {
          const queues = yield* Queues
          const poisonDeliveries: Array<number> = []
          const good = new Set<string>()
          let cured = false
          yield* consumeInBackground("bosun-review-batches", (m) =>
            Effect.suspend(() => {
              if (m.body === "poison" && !cured) {
                poisonDeliveries.push(m.deliveries)
                return Effect.fail(`cannot parse batch (delivery ${m.deliveries})`)
              }
              good.add(`${m.body}@${m.deliveries}`)
              return Effect.void
            })
          )
          yield* queues.send("bosun-review-batches", "poison")
          for (let i = 0; i < 20; i++) yield* queues.send("bosun-review-batches", `good-${i}`)
          yield* waitFor(queues.deadLetters.count("bosun-review-batches").pipe(Effect.orDie), (n) => n === 1)
          yield* waitFor(
            Effect.sync(() => good.size),
            (n) => n === 20
          )
          yield* waitFor(queues.depth("bosun-review-batches").pipe(Effect.orDie), (n) => n === 0)
          assert.deepStrictEqual(poisonDeliveries, [1, 2, 3, 4, 5])
          assert.strictEqual(poisonDeliveries.length, MAX_DELIVERIES)
          const [letter, ...others] = yield* queues.deadLetters.list("bosun-review-batches")
          assert.lengthOf(others, 0)
          assert.strictEqual(letter?.queue, "bosun-review-batches")
          assert.strictEqual(letter?.body, "poison")
          assert.strictEqual(letter?.deliveries, 5)
          assert.include(letter?.lastError, "cannot parse batch (delivery 5)")
          assert.instanceOf(letter?.failedAt, Date)
          assert.isBelow(Math.abs(Date.now() - (letter?.failedAt.getTime() ?? 0)), 60_000)
          for (let i = 0; i < 20; i++) assert.isTrue(good.has(`good-${i}@1`), `good-${i} handled once, first time`)

          cured = true
          assert.strictEqual(yield* queues.deadLetters.replay("bosun-review-batches"), 1)
          assert.strictEqual(yield* queues.deadLetters.count("bosun-review-batches"), 0)
          yield* waitFor(
            Effect.sync(() => good.has("poison@1")),
            (ok) => ok
          )
        })
    )

    it.effect("redelivers to another consumer a message whose consumer fiber was killed mid-message", () =>
      Effect.gen(function* () {
        const queues = yield* Queues
        const started = yield* Deferred.make<QueueMessage>()
        const first = yield* Effect.forkChild(
          queues.consume("bosun-inbox", (m) => Deferred.succeed(started, m).pipe(Effect.andThen(Effect.never)), {
            concurrency: 1
          })
        )
        yield* queues.send("bosun-inbox", "held-by-a-dying-consumer")
        const held = yield* Deferred.await(started)
        assert.strictEqual(held.deliveries, 1)
        yield* Fiber.interrupt(first)
        const done: Array<QueueMessage> = []
        yield* consumeInBackground("bosun-inbox", (m) => Effect.sync(() => void done.push(m)))
        yield* waitFor(
          Effect.sync(() => done.length),
          (n) => n >= 1
        )
        assert.strictEqual(done[0]?.id, held.id)
        assert.strictEqual(done[0]?.body, "held-by-a-dying-consumer")
        assert.strictEqual(done[0]?.deliveries, 2)
        assert.lengthOf(done, 1)
      })
    )

    it.effect("handles once a message whose handler is slower than the retry delay, with consumers waiting", () =>
      Effect.gen(function* () {
        const queues = yield* Queues
        const counts = new Map<string, number>()
        const slow = (m: QueueMessage) =>
          Effect.sleep(Duration.times(testQueueSettings.retryDelay, 6)).pipe(
            Effect.andThen(Effect.sync(() => void counts.set(m.body, (counts.get(m.body) ?? 0) + 1)))
          )
        yield* consumeInBackground("bosun-review-batches", slow, 2)
        yield* consumeInBackground("bosun-review-batches", slow, 2)
        for (let i = 0; i < 6; i++) yield* queues.send("bosun-review-batches", `slower-than-retry-${i}`)
        yield* waitFor(
          Effect.sync(() => counts.size),
          (n) => n === 6
        )
        // Long enough for a wrongly reclaimed message to be handled a second time.
        yield* Effect.sleep(Duration.times(testQueueSettings.retryDelay, 10))
        assert.deepStrictEqual([...counts.values()], [1, 1, 1, 1, 1, 1])
      })
    )

    it.effect("handles at most `concurrency` messages at once, and heartbeats keep long handlers' messages", () =>
      Effect.gen(function* () {
        const queues = yield* Queues
        let inFlight = 0
        let peak = 0
        const handled: Array<string> = []
        yield* consumeInBackground(
          "bosun-effects",
          (m) =>
            Effect.gen(function* () {
              inFlight++
              peak = Math.max(peak, inFlight)
              // Longer than the visibility timeout: only heartbeats keep the message claimed.
              yield* Effect.sleep(Duration.sum(testQueueSettings.visibilityTimeout, Duration.millis(300)))
              inFlight--
              handled.push(m.body)
            }),
          3
        )
        for (let i = 0; i < 9; i++) yield* queues.send("bosun-effects", `slow-${i}`)
        yield* waitFor(
          Effect.sync(() => handled.length),
          (n) => n === 9
        )
        assert.strictEqual(peak, 3)
        assert.deepStrictEqual([...handled].sort(), Array.from({ length: 9 }, (_, i) => `slow-${i}`).sort())
      })
    )

    it.effect(
      "moves 20,000 messages from 8 producers through 4 consumers, finishing each exactly once",
      () =>
        Effect.gen(function* () {
          const queues = yield* Queues
          const sql = yield* SqlClient.SqlClient
          yield* sql`CREATE TABLE IF NOT EXISTS queue_ledger (id text PRIMARY KEY, times int NOT NULL)`.pipe(
            Effect.orDie
          )
          const ledger = (m: QueueMessage) =>
            sql`INSERT INTO queue_ledger (id, times) VALUES (${m.body}, 1)
              ON CONFLICT (id) DO UPDATE SET times = queue_ledger.times + 1`.pipe(Effect.orDie)
          for (let c = 0; c < 4; c++) yield* consumeInBackground("bosun-inbox", ledger, 8)
          const perProducer = 2_500
          yield* Effect.all(
            Array.from({ length: 8 }, (_, p) =>
              Effect.forEach(
                Array.from({ length: perProducer }, (_, i) => `p${p}-m${i}`),
                (body) => queues.send("bosun-inbox", body),
                { concurrency: 16, discard: true }
              )
            ),
            { concurrency: 8, discard: true }
          )
          const counted = sql<{ n: number; max: number | null }>`
          SELECT count(*)::int AS n, max(times)::int AS max FROM queue_ledger`.pipe(
            Effect.map((rows) => rows[0] ?? { n: 0, max: null }),
            Effect.orDie
          )
          const final = yield* Effect.orDie(eventually(counted, (r) => r.n === 20_000, Duration.seconds(150)))
          assert.strictEqual(final.n, 20_000)
          assert.strictEqual(final.max, 1)
          assert.strictEqual(yield* queues.deadLetters.count("bosun-inbox"), 0)
        }),
      // The test's own limit matches the deadline above: on a slow 2-core machine the Postgres
      // adapter needs close to a minute for 20,000 messages while other files run beside it.
      180_000
    )
  })
