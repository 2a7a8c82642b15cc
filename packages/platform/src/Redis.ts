/**
 * The Redis connection the Redis-backed adapters share (cache, queues), from `REDIS_URL`.
 * RESP2 is requested so replies have one shape (arrays), whatever the server defaults to.
 * Blocking readers (queue consumers) take their own connection with `duplicate`.
 */
import { Context, Data, Effect, Layer, Redacted, type Scope } from "effect"
import { Redis as IORedis } from "ioredis"

export class RedisError extends Data.TaggedError("RedisError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export const redisFailure = (what: string) => (cause: unknown) =>
  new RedisError({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })

export class Redis extends Context.Service<
  Redis,
  {
    readonly client: IORedis
    /** A new connection with the same settings, closed when the scope closes. */
    readonly duplicate: Effect.Effect<IORedis, RedisError, Scope.Scope>
  }
>()("bosun/server/storage/Redis") {
  static readonly layer = (url: Redacted.Redacted<string>) =>
    Layer.effect(
      Redis,
      Effect.gen(function* () {
        const open = (make: () => IORedis) =>
          Effect.acquireRelease(
            Effect.tryPromise({
              try: () => {
                const client = make()
                // ioredis reports why a connection closed only on its `error` event; the promise
                // says just "Connection is closed.". Keep the reason, and close a client whose first
                // connect failed: nothing else would, and it would reconnect for ever.
                let reason: unknown
                const remember = (error: unknown) => {
                  reason = error
                }
                client.on("error", remember)
                return client.connect().then(
                  () => {
                    client.off("error", remember)
                    return client
                  },
                  (error: unknown) => {
                    client.off("error", remember)
                    client.disconnect()
                    return Promise.reject(reason ?? error)
                  }
                )
              },
              catch: redisFailure("cannot connect to Redis")
            }),
            (client) => Effect.promise(() => client.quit().catch(() => client.disconnect()))
          )
        const client = yield* open(
          () =>
            new IORedis(Redacted.value(url), {
              lazyConnect: true,
              protocol: 2,
              maxRetriesPerRequest: 3,
              enableAutoPipelining: true
            })
        )
        return Redis.of({
          client,
          duplicate: open(() => client.duplicate({ lazyConnect: true, enableAutoPipelining: false }))
        })
      })
    )
}
