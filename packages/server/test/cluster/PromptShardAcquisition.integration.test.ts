/**
 * `PromptShardAcquisition` (target: < 1 s after SIGTERM) over the real SQL runner storage:
 * two runners' storages on one Postgres, each with its own lock session, so the shard locks are
 * the advisory locks production uses. Shards the other runner releases inside the window are
 * taken by the same acquire; one it keeps is given up after the window when nothing was taken, or
 * once asking has brought nothing new for the quiet interval; shards already held are never
 * locked twice (advisory locks are re-entrant, so a second lock would outlive a release).
 */

import { layerPromptShardAcquisition } from "@bosun/actors/cluster/PromptShardAcquisition"
import { freshDatabase } from "@bosun/testing"
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Fiber, Layer, Redacted } from "effect"
import { RunnerAddress, RunnerStorage, ShardId, ShardingConfig, SqlRunnerStorage } from "effect/cluster"
import { PersistenceError } from "effect/cluster/ClusterError"

const config = ShardingConfig.layer({ shardLockExpiration: Duration.seconds(6) })

/** One runner's storage with a pool of its own; `prompt` wraps it as the server does. */
const storageOf = (
  url: string,
  prompt: { readonly window: Duration.Duration; readonly quiet?: Duration.Duration } | undefined
) =>
  Effect.gen(function* () {
    const sql = PgClient.layer({ url: Redacted.make(url), maxConnections: 3 }).pipe(Layer.orDie)
    const base = Layer.orDie(SqlRunnerStorage.layer).pipe(Layer.provide(Layer.merge(sql, config)))
    const layer =
      prompt === undefined
        ? base
        : layerPromptShardAcquisition({
            window: prompt.window,
            spacing: Duration.millis(25),
            quiet: prompt.quiet ?? Duration.millis(150)
          }).pipe(Layer.provide(base))
    const context = yield* Layer.build(Layer.fresh(layer))
    return Context.get(context, RunnerStorage.RunnerStorage)
  })

const shards = (...ids: ReadonlyArray<number>) => ids.map((id) => ShardId.make("default", id))
const names = (acquired: ReadonlyArray<ShardId.ShardId>) => acquired.map(String).sort()

const leaving = RunnerAddress.make("127.0.0.1", 40001)
const survivor = RunnerAddress.make("127.0.0.1", 40002)

describe("prompt shard acquisition over Postgres advisory locks", () => {
  it.live(
    "a shard the stopping runner releases inside the window is taken by the same acquire, well before the library's next round",
    () =>
      Effect.gen(function* () {
        const database = yield* freshDatabase
        const old = yield* storageOf(database.url, undefined)
        const next = yield* storageOf(database.url, { window: Duration.seconds(3) })

        assert.deepStrictEqual(names(yield* old.acquire(leaving, shards(1, 2))), ["default:1", "default:2"])

        const started = Date.now()
        const acquiring = yield* Effect.forkChild(next.acquire(survivor, shards(1, 2)))
        yield* Effect.sleep(Duration.millis(200))
        yield* old.release(leaving, ShardId.make("default", 1))
        yield* old.release(leaving, ShardId.make("default", 2))
        const acquired = yield* Fiber.join(acquiring)
        const took = Date.now() - started

        assert.deepStrictEqual(names(acquired), ["default:1", "default:2"])
        assert.isAtLeast(took, 200, "it waited for the release")
        assert.isBelow(took, 1_500, "and took the shards within a few retries of it, not after the window")
        // The old runner cannot take them back: the survivor's session holds them now.
        assert.deepStrictEqual(yield* old.acquire(leaving, shards(1, 2)), [])
      }),
    { timeout: 60_000 }
  )

  it.live(
    "shards another runner keeps: asked for alone they are asked for the whole window; beside free ones, until asking brings nothing new for the quiet interval",
    () =>
      Effect.gen(function* () {
        const database = yield* freshDatabase
        const holder = yield* storageOf(database.url, undefined)
        const next = yield* storageOf(database.url, { window: Duration.seconds(2), quiet: Duration.millis(100) })
        yield* holder.acquire(leaving, shards(7, 11))

        let started = Date.now()
        assert.deepStrictEqual(yield* next.acquire(survivor, shards(7)), [])
        let took = Date.now() - started
        assert.isAtLeast(took, 2_000, "with nothing taken it kept asking for the whole window")
        assert.isBelow(took, 6_000)

        started = Date.now()
        assert.deepStrictEqual(names(yield* next.acquire(survivor, shards(7, 8))), ["default:8"])
        took = Date.now() - started
        assert.isAtLeast(took, 100, "it asked again for the quiet interval")
        assert.isBelow(took, 1_500, "and returned the free shard without waiting out the window")

        // A release that keeps coming keeps it asking: 11 is freed after 8 was taken, inside the quiet interval.
        started = Date.now()
        const acquiring = yield* Effect.forkChild(next.acquire(survivor, shards(7, 9, 11)))
        yield* Effect.sleep(Duration.millis(60))
        yield* holder.release(leaving, ShardId.make("default", 11))
        assert.deepStrictEqual(names(yield* Fiber.join(acquiring)), ["default:11", "default:9"])
        assert.deepStrictEqual(names(yield* holder.refresh(leaving, shards(7))), ["default:7"], "the holder keeps 7")
      }),
    { timeout: 60_000 }
  )

  it.live(
    "shards already held are never locked a second time: one release frees each, and another runner can take it",
    () =>
      Effect.gen(function* () {
        const database = yield* freshDatabase
        const holder = yield* storageOf(database.url, undefined)
        const runner = yield* storageOf(database.url, { window: Duration.millis(200) })
        yield* holder.acquire(leaving, shards(5))

        // 4 is taken on the first ask, 5 never: every retry must ask for 5 alone.
        assert.deepStrictEqual(names(yield* runner.acquire(survivor, shards(4, 5))), ["default:4"])
        assert.deepStrictEqual(names(yield* runner.acquire(survivor, shards(4, 5))), ["default:4"])

        yield* runner.release(survivor, ShardId.make("default", 4))
        const other = yield* storageOf(database.url, undefined)
        assert.deepStrictEqual(
          names(yield* other.acquire(RunnerAddress.make("127.0.0.1", 40003), shards(4))),
          ["default:4"],
          "one release let go of shard 4 entirely"
        )
      }),
    { timeout: 60_000 }
  )

  it.live("with a zero window it is the storage's own acquire: one ask, what it got", () =>
    Effect.gen(function* () {
      const database = yield* freshDatabase
      const holder = yield* storageOf(database.url, undefined)
      const runner = yield* storageOf(database.url, { window: Duration.zero })
      yield* holder.acquire(leaving, shards(9))
      const started = Date.now()
      assert.deepStrictEqual(names(yield* runner.acquire(survivor, shards(9, 10))), ["default:10"])
      assert.isBelow(Date.now() - started, 1_000)
    })
  )

  it.live("a retry that fails keeps the shards already taken: they are reported, the rest left to the next round", () =>
    Effect.gen(function* () {
      const asked: Array<ReadonlyArray<string>> = []
      const failing = RunnerStorage.RunnerStorage.of({
        ...(yield* RunnerStorage.makeMemory),
        acquire: (_address, shardIds) => {
          const wanted = Array.from(shardIds)
          asked.push(wanted.map(String))
          // The first ask gets shard 1; every later one loses its connection.
          return asked.length === 1
            ? Effect.succeed(wanted.filter((shardId) => shardId.id === 1))
            : Effect.fail(new PersistenceError({ cause: new Error("connection reset") }))
        }
      })
      const context = yield* Layer.build(
        layerPromptShardAcquisition({
          window: Duration.millis(500),
          spacing: Duration.millis(25),
          quiet: Duration.millis(100)
        }).pipe(Layer.provide(Layer.succeed(RunnerStorage.RunnerStorage, failing)))
      )
      const acquired = yield* Context.get(context, RunnerStorage.RunnerStorage).acquire(survivor, shards(1, 2))
      assert.deepStrictEqual(names(acquired), ["default:1"])
      assert.isAtLeast(asked.length, 2, "it asked again")
      assert.deepStrictEqual(
        asked.slice(1),
        asked.slice(1).map(() => ["default:2"]),
        "only for the missing shard"
      )
    })
  )
})
