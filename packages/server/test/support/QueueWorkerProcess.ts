/**
 * A queue consumer in a process of its own, for the "consumer process killed mid-message" test:
 * argv is `<postgres|redis> <url> <visibility ms> [redis key prefix]`. It consumes `bosun-inbox`,
 * prints `holding <id> <deliveries>` for each message and never finishes handling it, so the
 * test can SIGKILL it with the message claimed.
 */

import { Redis } from "@bosun/platform/Redis"
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer, Redacted } from "effect"
import { Queues } from "../../src/platform/storage/Queue.ts"
import { layerPostgres } from "../../src/platform/storage/QueuePostgres.ts"
import { layerRedis } from "../../src/platform/storage/QueueRedis.ts"

const [adapter, url = "", visibility = "400", prefix = ""] = process.argv.slice(2)
const settings = {
  visibilityTimeout: Duration.millis(Number(visibility)),
  retryDelay: Duration.millis(100),
  pollInterval: Duration.millis(50)
}
const queues: Layer.Layer<Queues, unknown> =
  adapter === "redis"
    ? layerRedis({ ...settings, prefix }).pipe(Layer.provide(Redis.layer(Redacted.make(url))))
    : layerPostgres(settings).pipe(Layer.provide(PgClient.layer({ url: Redacted.make(url) })))

const program = Effect.gen(function* () {
  const q = yield* Queues
  process.stdout.write("ready\n")
  return yield* q.consume("bosun-inbox", (m) =>
    Effect.sync(() => process.stdout.write(`holding ${m.id} ${m.deliveries}\n`)).pipe(Effect.andThen(Effect.never))
  )
}).pipe(Effect.scoped, Effect.provide(queues))

Effect.runPromise(program).catch((error) => {
  process.stderr.write(`${String(error)}\n`)
  process.exit(1)
})
