/**
 * `npm run bench:queues`: messages/s end to end (8 producers, 4 consumers, ids-only bodies) and
 * the send→handler latency p50/p99 of each queue adapter, beside raw baselines taken in the same
 * run: one ioredis connection doing pipelined XADD then XREADGROUP/XACK, and bare SQL doing the
 * Postgres adapter's insert and SKIP LOCKED claim/delete without the consumer engine.
 * Writes the figures to `.bench/queues.json`.
 *
 * Postgres: DATABASE_URL (a fresh database is created in it) or an embedded Postgres.
 * Redis: REDIS_URL or a `redis-server` from PATH on a free port (else the Redis rows are skipped).
 * BENCH_MESSAGES (default 20000) messages per adapter; BENCH_HANDLERS (default 64) handlers per consumer.
 */

import { execFileSync, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as net from "node:net"
import { freePort } from "@bosun/platform/EmbeddedPostgres"
import { Redis } from "@bosun/platform/Redis"
import { Queues } from "@bosun/server/platform/storage/Queue"
import { layerPostgres } from "@bosun/server/platform/storage/QueuePostgres"
import { layerRedis } from "@bosun/server/platform/storage/QueueRedis"
import { PgClient } from "@effect/sql-pg"
import { Cause, Context, Duration, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { Redis as IORedis } from "ioredis"
import { benchDatabase } from "./BenchDatabase.ts"
import { runContext, writeReport } from "./Report.ts"

const total = Number(process.env.BENCH_MESSAGES ?? 20_000)
const handlersPerConsumer = Number(process.env.BENCH_HANDLERS ?? 64)
const settings = {
  visibilityTimeout: Duration.seconds(30),
  retryDelay: Duration.seconds(5),
  pollInterval: Duration.millis(200)
}

interface Figures {
  readonly messagesPerSec: number
  readonly p50Ms?: number
  readonly p99Ms?: number
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

/**
 * 8 producers, 4 consumers (8 handlers each) on a fresh instance of the adapter `layer`; the body
 * carries the send time. Consumers and the adapter live in one scope, closed before returning.
 */
const endToEnd = <E>(layer: Layer.Layer<Queues, E>) =>
  Effect.gen(function* () {
    const queues = yield* Queues
    const latencies: Array<number> = []
    let handled = 0
    const done = Promise.withResolvers<void>()
    yield* Effect.forEach(Array.from({ length: 4 }), () =>
      Effect.forkChild(
        queues.consume(
          "bosun-inbox",
          (m) =>
            Effect.sync(() => {
              latencies.push(performance.now() - Number(m.body.split(":")[1]))
              if (++handled === total) done.resolve()
            }),
          { concurrency: handlersPerConsumer }
        )
      )
    )
    const started = performance.now()
    yield* Effect.forEach(
      Array.from({ length: 8 }, (_, p) => p),
      (p) =>
        Effect.forEach(
          Array.from({ length: total / 8 }, (_, i) => i),
          (i) => queues.send("bosun-inbox", `${p}-${i}:${performance.now()}`),
          { concurrency: 16, discard: true }
        ),
      { concurrency: 8, discard: true }
    )
    yield* Effect.promise(() => done.promise)
    const seconds = (performance.now() - started) / 1000
    latencies.sort((a, b) => a - b)
    return { messagesPerSec: total / seconds, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) }
  }).pipe(
    // Consumers (and their LISTEN connections) stop before the adapter and its pool are released.
    Effect.scoped,
    Effect.provide(layer)
  )

/** One ioredis connection: pipelined XADD of every message, then XREADGROUP COUNT 500 + XACK. */
const rawRedis = async (url: string): Promise<Figures> => {
  const client = new IORedis(url, { protocol: 2 })
  const stream = `bench:raw:${randomBytes(4).toString("hex")}`
  await client.xgroup("CREATE", stream, "g", "0", "MKSTREAM")
  const started = performance.now()
  for (let offset = 0; offset < total; offset += 1000) {
    const pipeline = client.pipeline()
    for (let i = offset; i < Math.min(total, offset + 1000); i++) pipeline.xadd(stream, "*", "body", `m-${i}`)
    await pipeline.exec()
  }
  let read = 0
  while (read < total) {
    const reply = (await client.xreadgroup("GROUP", "g", "c", "COUNT", 500, "STREAMS", stream, ">")) as Array<
      [string, Array<[string, Array<string>]>]
    > | null
    const entries = reply?.[0]?.[1] ?? []
    if (entries.length === 0) break
    await client.xack(stream, "g", ...entries.map(([id]) => id))
    read += entries.length
  }
  const seconds = (performance.now() - started) / 1000
  await client.del(stream)
  client.disconnect()
  return { messagesPerSec: read / seconds }
}

/** The Postgres adapter's own statements, issued bare: inserts, then claim+delete batches of 8 from 4 workers. */
const rawPostgres = (sql: PgClient.PgClient) =>
  Effect.gen(function* () {
    yield* sql`CREATE TABLE raw_queue (id bigserial PRIMARY KEY, body text NOT NULL, visible_at timestamptz NOT NULL DEFAULT now())`
    const started = performance.now()
    yield* Effect.forEach(
      Array.from({ length: total }, (_, i) => i),
      (i) => sql`INSERT INTO raw_queue (body) VALUES (${`m-${i}`})`,
      { concurrency: 16, discard: true }
    )
    let taken = 0
    const worker = Effect.gen(function* () {
      while (true) {
        const rows = yield* sql<{ id: string }>`
          DELETE FROM raw_queue WHERE id IN (
            SELECT id FROM raw_queue WHERE visible_at <= now() ORDER BY id LIMIT 8 FOR UPDATE SKIP LOCKED)
          RETURNING id`
        if (rows.length === 0) return
        taken += rows.length
      }
    })
    yield* Effect.all([worker, worker, worker, worker], { concurrency: 4 })
    return { messagesPerSec: taken / ((performance.now() - started) / 1000) } satisfies Figures
  })

/** Polls a fresh redis-server with PING until it answers (5 s at most). */
const waitForRedis = async (port: number) => {
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host: "127.0.0.1", port })
      socket.once("error", () => resolve(false))
      socket.once("connect", () => socket.write("PING\r\n"))
      socket.once("data", (data) => {
        socket.destroy()
        resolve(data.toString().startsWith("+PONG"))
      })
    })
    if (ok) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`redis-server on port ${port} did not answer`)
}

const main = Effect.gen(function* () {
  const scope = yield* Scope.make()
  const db = yield* benchDatabase(scope, { maxConnections: 16 })
  const pgLayer = db.layer
  const pgContext = db.context

  // Redis: REDIS_URL or a redis-server of our own.
  let redisUrl = process.env.REDIS_URL ?? null
  if (!redisUrl) {
    const binary = (() => {
      try {
        return execFileSync("sh", ["-c", "command -v redis-server"]).toString().trim()
      } catch {
        return ""
      }
    })()
    if (binary) {
      const port = yield* freePort
      const child = spawn(binary, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
        stdio: "ignore"
      })
      yield* Scope.addFinalizer(
        scope,
        Effect.sync(() => child.kill("SIGTERM"))
      )
      redisUrl = `redis://127.0.0.1:${port}`
      yield* Effect.promise(() => waitForRedis(port))
    }
  }

  const results: Record<string, { adapter: Figures; baseline: Figures; ratio: number }> = {}

  const pgBaseline = yield* rawPostgres(Context.get(pgContext, PgClient.PgClient))
  const pgAdapter = yield* endToEnd(layerPostgres(settings).pipe(Layer.provide(pgLayer)))
  results.postgres = {
    adapter: pgAdapter,
    baseline: pgBaseline,
    ratio: pgAdapter.messagesPerSec / pgBaseline.messagesPerSec
  }

  if (redisUrl) {
    const url = redisUrl
    const redisBaseline = yield* Effect.promise(() => rawRedis(url))
    const redisAdapter = yield* endToEnd(
      layerRedis({ ...settings, prefix: `bench:${randomBytes(4).toString("hex")}:` }).pipe(
        Layer.provide(Redis.layer(Redacted.make(url)))
      )
    )
    results.redis = {
      adapter: redisAdapter,
      baseline: redisBaseline,
      ratio: redisAdapter.messagesPerSec / redisBaseline.messagesPerSec
    }
  } else {
    console.log("Redis rows skipped: no REDIS_URL and no redis-server on PATH")
  }

  yield* db.drop
  yield* Scope.close(scope, Exit.void)

  const report = {
    ...runContext("queues"),
    messages: total,
    handlersPerConsumer,
    results
  }
  yield* Effect.promise(() => writeReport("queues", report))
  const n = (x: number | undefined, d = 0) => (x === undefined ? "-" : x.toFixed(d)).padStart(10)
  console.log(
    `bench:queues — ${total} messages, 8 producers, 4 consumers × ${handlersPerConsumer}, ${report.machine.cpus}× ${report.machine.cpu}`
  )
  console.log(`${"".padEnd(34)}${"msg/s".padStart(10)}${"p50 ms".padStart(10)}${"p99 ms".padStart(10)}`)
  for (const [name, r] of Object.entries(results)) {
    console.log(
      `${`${name} adapter (end to end)`.padEnd(34)}${n(r.adapter.messagesPerSec)}${n(r.adapter.p50Ms, 1)}${n(r.adapter.p99Ms, 1)}`
    )
    console.log(`${`${name} raw baseline`.padEnd(34)}${n(r.baseline.messagesPerSec)}`)
    console.log(`${`${name}: adapter / raw`.padEnd(34)}${n(r.ratio * 100, 1)} %`)
  }
  console.log("figures written to .bench/queues.json")
})

Effect.runPromiseExit(Effect.scoped(main)).then((exit) => {
  if (exit._tag === "Failure") console.error(Cause.pretty(exit.cause))
  process.exit(exit._tag === "Success" ? 0 : 1)
})
