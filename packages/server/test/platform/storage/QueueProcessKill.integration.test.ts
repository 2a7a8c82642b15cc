/**
 * A consumer *process* killed (SIGKILL) with a message claimed loses nothing: once the visibility
 * timeout passes without a heartbeat, another consumer gets the message, delivery count 2, and
 * handles it once. Run against both queue adapters.
 */

import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { eventually, layerTestRedis, redisUrl, TestDatabase, testKeyPrefix } from "@bosun/testing"
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { runMigrations } from "../../../src/platform/db/Migrator.ts"
import { type QueueMessage, Queues } from "../../../src/platform/storage/Queue.ts"
import { layerPostgres } from "../../../src/platform/storage/QueuePostgres.ts"
import { layerRedis } from "../../../src/platform/storage/QueueRedis.ts"
import { migrationsDir } from "../../support/TestServer.ts"

const worker = fileURLToPath(new URL("../../support/QueueWorkerProcess.ts", import.meta.url))
const settings = {
  visibilityTimeout: Duration.millis(400),
  retryDelay: Duration.millis(100),
  pollInterval: Duration.millis(50)
}

/** Spawns the worker, waits until it holds a message, and returns the held id and how to kill it. */
const spawnHolder = (args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, [worker, ...args], { stdio: ["ignore", "pipe", "inherit"] })
      let out = ""
      child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()))
      return { child, output: () => out }
    }),
    ({ child }) => Effect.sync(() => child.kill("SIGKILL"))
  )

const killedConsumerTest = (args: () => ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const queues = yield* Queues
    const holder = yield* spawnHolder(args())
    yield* Effect.orDie(eventually(Effect.sync(holder.output), (o) => o.includes("ready"), Duration.seconds(20)))
    const id = yield* queues.send("bosun-inbox", "held-by-a-process")
    yield* Effect.orDie(
      eventually(Effect.sync(holder.output), (o) => o.includes(`holding ${id} 1`), Duration.seconds(20))
    )
    holder.child.kill("SIGKILL")
    const handled: Array<QueueMessage> = []
    yield* Effect.forkScoped(queues.consume("bosun-inbox", (m) => Effect.sync(() => void handled.push(m))))
    yield* Effect.orDie(
      eventually(
        Effect.sync(() => handled.length),
        (n) => n >= 1,
        Duration.seconds(20)
      )
    )
    assert.strictEqual(handled[0]?.id, id)
    assert.strictEqual(handled[0]?.body, "held-by-a-process")
    assert.strictEqual(handled[0]?.deliveries, 2)
    assert.lengthOf(handled, 1)
  })

const migrated = Layer.effectDiscard(runMigrations(migrationsDir)).pipe(Layer.provideMerge(TestDatabase.layer))

layer(layerPostgres(settings).pipe(Layer.provideMerge(migrated)), { excludeTestServices: true })(
  "Postgres queue, consumer process killed",
  (it) => {
    it.effect("redelivers the killed process's message to another consumer, once, as delivery 2", () =>
      Effect.flatMap(TestDatabase, (db) => killedConsumerTest(() => ["postgres", db.url, "400"]))
    )
  }
)

const prefix = testKeyPrefix()
describe.skipIf(redisUrl() === null)("Redis", () => {
  layer(layerRedis({ ...settings, prefix }).pipe(Layer.provide(layerTestRedis)), { excludeTestServices: true })(
    "Redis queue, consumer process killed",
    (it) => {
      it.effect("redelivers the killed process's message to another consumer, once, as delivery 2", () =>
        killedConsumerTest(() => ["redis", redisUrl() ?? "", "400", prefix])
      )
    }
  )
})
