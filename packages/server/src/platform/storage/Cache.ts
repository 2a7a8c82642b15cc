/**
 * The short-lived cache port (docs/interface.md: What the service does 4): sealed GitHub
 * installation tokens and other values that may be recomputed. Values are strings the caller has
 * already sealed; the cache never sees plaintext. Adapters: `CacheRedis.ts` and `CacheMemory.ts`
 * (embedded default), both held to `test/storage/Cache.conformance.ts`.
 *
 * `getOrLoad` is single-flight within a process: concurrent callers for one key share one load.
 * Across processes two loads may race; the last write wins, which is harmless for tokens.
 */
import { Context, Data, Deferred, Duration, Effect, type Exit, Option } from "effect"

export class CacheError extends Data.TaggedError("CacheError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export interface CacheShape {
  readonly get: (key: string) => Effect.Effect<Option.Option<string>, CacheError>
  /** Stores `value` for `ttl` (at least 1 ms). */
  readonly set: (key: string, value: string, ttl: Duration.Input) => Effect.Effect<void, CacheError>
  readonly delete: (key: string) => Effect.Effect<void, CacheError>
  /** The cached value, or the result of `load` (stored for `ttl`); one load per key at a time. */
  readonly getOrLoad: <E, R>(
    key: string,
    ttl: Duration.Input,
    load: Effect.Effect<string, E, R>
  ) => Effect.Effect<string, E | CacheError, R>
}

export class Cache extends Context.Service<Cache, CacheShape>()("bosun/server/storage/Cache") {}

/** Milliseconds of a TTL, at least 1. */
export const ttlMillis = (ttl: Duration.Input) => Math.max(1, Math.ceil(Duration.toMillis(ttl)))

/**
 * Builds `getOrLoad` from `get`/`set` with in-process single flight: the first caller for a key
 * loads; callers arriving meanwhile wait for its result (success or failure) instead of loading.
 */
export const makeGetOrLoad = (get: CacheShape["get"], set: CacheShape["set"]): CacheShape["getOrLoad"] => {
  const inFlight = new Map<string, Deferred.Deferred<string, unknown>>()
  return <E, R>(key: string, ttl: Duration.Input, load: Effect.Effect<string, E, R>) =>
    Effect.flatMap(get(key), (cached) => {
      if (Option.isSome(cached)) return Effect.succeed(cached.value)
      const running = inFlight.get(key)
      if (running !== undefined) return Deferred.await(running) as Effect.Effect<string, E | CacheError>
      const deferred = Deferred.makeUnsafe<string, unknown>()
      inFlight.set(key, deferred)
      return load.pipe(
        Effect.tap((value) => set(key, value, ttl)),
        Effect.onExit((exit) => {
          inFlight.delete(key)
          return Deferred.done(deferred, exit as Exit.Exit<string, unknown>)
        })
      )
    })
}
