/**
 * Redis cache adapter: `SET key value PX ttl`, `GET`, `DEL`, under a key prefix (default
 * `bosun:cache:`) so the cache can share a Redis with other data.
 */

import { Redis } from "@bosun/platform/Redis"
import { type Duration, Effect, Layer, Option } from "effect"
import { Cache, CacheError, makeGetOrLoad, ttlMillis } from "./Cache.ts"

const failure = (what: string) => (cause: unknown) =>
  new CacheError({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })

export const makeRedisCache = Effect.fn("Cache.makeRedis")(function* (prefix: string) {
  const { client } = yield* Redis

  const get = Effect.fn("Cache.get")(function* (key: string) {
    const value = yield* Effect.tryPromise({ try: () => client.get(prefix + key), catch: failure("cache get") })
    return Option.fromNullishOr(value)
  })

  const set = Effect.fn("Cache.set")(function* (key: string, value: string, ttl: Duration.Input) {
    yield* Effect.tryPromise({
      try: () => client.set(prefix + key, value, "PX", ttlMillis(ttl)),
      catch: failure("cache set")
    })
  })

  const remove = Effect.fn("Cache.delete")(function* (key: string) {
    yield* Effect.tryPromise({ try: () => client.del(prefix + key), catch: failure("cache delete") })
  })

  return Cache.of({ get, set, delete: remove, getOrLoad: makeGetOrLoad(get, set) })
})

export const layerRedis = (prefix = "bosun:cache:") => Layer.effect(Cache, makeRedisCache(prefix))
