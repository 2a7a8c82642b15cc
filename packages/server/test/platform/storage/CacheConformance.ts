/**
 * What every cache adapter must do: round trips, expiry, deletion, and single-flight loading.
 */
import { eventually } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, type Layer, Option } from "effect"
import * as fc from "fast-check"
import { Cache } from "../../../src/platform/storage/Cache.ts"

export const cacheConformance = <E>(name: string, cache: Layer.Layer<Cache, E>) =>
  layer(cache, { excludeTestServices: true })(`Cache conformance: ${name}`, (it) => {
    it.effect("stores, reads and deletes a value", () =>
      Effect.gen(function* () {
        const cache = yield* Cache
        assert.isTrue(Option.isNone(yield* cache.get("token:1")))
        yield* cache.set("token:1", "sealed-v1", "1 minute")
        assert.deepStrictEqual(yield* cache.get("token:1"), Option.some("sealed-v1"))
        yield* cache.set("token:1", "sealed-v2", "1 minute")
        assert.deepStrictEqual(yield* cache.get("token:1"), Option.some("sealed-v2"))
        yield* cache.delete("token:1")
        assert.isTrue(Option.isNone(yield* cache.get("token:1")))
        yield* cache.delete("token:never-set")
      })
    )

    it.effect("round-trips any string value (property)", () =>
      Effect.gen(function* () {
        const cache = yield* Cache
        for (const [i, value] of fc.sample(fc.string({ unit: "grapheme", maxLength: 200 }), 100).entries()) {
          yield* cache.set(`prop:${i}`, value, "1 minute")
          assert.deepStrictEqual(yield* cache.get(`prop:${i}`), Option.some(value))
        }
      })
    )

    it.effect("forgets a value once its TTL has passed", () =>
      Effect.gen(function* () {
        const cache = yield* Cache
        yield* cache.set("short", "lived", "150 millis")
        yield* cache.set("long", "lived", "1 minute")
        assert.deepStrictEqual(yield* cache.get("short"), Option.some("lived"))
        yield* eventually(cache.get("short"), Option.isNone)
        assert.deepStrictEqual(yield* cache.get("long"), Option.some("lived"))
      })
    )

    it.effect("getOrLoad loads on a miss, stores the result, and serves hits without loading", () =>
      Effect.gen(function* () {
        const cache = yield* Cache
        let loads = 0
        const load = Effect.sync(() => `loaded-${++loads}`)
        assert.strictEqual(yield* cache.getOrLoad("lazy", "1 minute", load), "loaded-1")
        assert.strictEqual(yield* cache.getOrLoad("lazy", "1 minute", load), "loaded-1")
        assert.strictEqual(loads, 1)
        assert.deepStrictEqual(yield* cache.get("lazy"), Option.some("loaded-1"))
      })
    )

    it.effect("getOrLoad runs one load for 20 concurrent callers of one key", () =>
      Effect.gen(function* () {
        const cache = yield* Cache
        const release = yield* Deferred.make<void>()
        let loads = 0
        const load = Effect.sync(() => ++loads).pipe(Effect.andThen(Deferred.await(release)), Effect.as("shared-value"))
        const callers = yield* Effect.forkChild(
          Effect.all(
            Array.from({ length: 20 }, () => cache.getOrLoad("flight", "1 minute", load)),
            { concurrency: "unbounded" }
          )
        )
        yield* eventually(
          Effect.sync(() => loads),
          (n) => n >= 1
        )
        yield* Deferred.succeed(release, undefined)
        const values = yield* Fiber.join(callers)
        assert.deepStrictEqual(
          values,
          Array.from({ length: 20 }, () => "shared-value")
        )
        assert.strictEqual(loads, 1)
      })
    )

    it.effect("getOrLoad shares a failed load with its waiters, caches nothing, and loads again next time", () =>
      Effect.gen(function* () {
        const cache = yield* Cache
        let loads = 0
        const failing = Effect.suspend(() => {
          loads++
          return Effect.fail("provider down" as const)
        })
        const error = yield* Effect.flip(cache.getOrLoad("flaky", "1 minute", failing))
        assert.strictEqual(error, "provider down")
        assert.isTrue(Option.isNone(yield* cache.get("flaky")))
        assert.strictEqual(yield* cache.getOrLoad("flaky", "1 minute", Effect.succeed("recovered")), "recovered")
        assert.strictEqual(loads, 1)
      })
    )
  })
