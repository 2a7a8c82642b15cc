/**
 * What an unauthenticated sender can make the server do with forged GitHub deliveries: the kept
 * webhook secrets are read from the database at most once per `BOSUN_WEBHOOK_SECRET_CACHE_TTL`,
 * one read at a time, however many bad signatures arrive. Observed from Postgres: while a test
 * transaction holds `github_apps` locked, a read of the secrets waits on that lock, visibly.
 */
import { TestDatabase } from "@bosun/testing"
import { PgClient } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { Context, Deferred, Duration, Effect, Fiber, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { configured, deliver } from "../support/GithubDeliveries.ts"
import { layerTestServer } from "../support/TestServer.ts"

const pullRequest = JSON.stringify({
  action: "opened",
  repository: { id: 1, name: "r", full_name: "acme/r", owner: { id: 424242, login: "acme" } },
  pull_request: { number: 1, title: "t", state: "open", head: { sha: "a" }, base: { sha: "b" } }
})

let sent = 0
const forged = () =>
  deliver({ id: `forged-${sent++}`, event: "pull_request", body: pullRequest, signature: `sha256=${"0".repeat(64)}` })

/**
 * A client of the test's database with connections of its own: the lock holder and the observer
 * must not wait for the server's pool, which reads waiting on the lock may fill.
 */
const observerClient = Effect.gen(function* () {
  const database = yield* TestDatabase
  const context = yield* Layer.build(
    PgClient.layer({ url: Redacted.make(database.url), maxConnections: 2 }).pipe(Layer.orDie)
  )
  return Context.get(context, SqlClient.SqlClient)
})

/** Reads of the webhook secrets now waiting on the lock. */
const waitingReads = (sql: SqlClient.SqlClient) =>
  sql<{ n: string }>`
    SELECT count(*)::text AS n FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock'
      AND query LIKE '%FROM github_apps a JOIN organizations o%'`.pipe(
    Effect.orDie,
    Effect.map((rows) => Number(rows[0]?.n ?? 0))
  )

/** Runs `body` while another transaction holds `github_apps` in ACCESS EXCLUSIVE mode. */
const whileLocked = <A, E, R>(sql: SqlClient.SqlClient, body: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const locked = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const holder = yield* sql
      .withTransaction(
        Effect.gen(function* () {
          yield* sql`LOCK TABLE github_apps IN ACCESS EXCLUSIVE MODE`
          yield* Deferred.succeed(locked, undefined)
          yield* Deferred.await(release)
        })
      )
      .pipe(Effect.orDie, Effect.forkChild)
    yield* Deferred.await(locked)
    return yield* body.pipe(Effect.ensuring(Effect.andThen(Deferred.succeed(release, undefined), Fiber.join(holder))))
  })

layer(layerTestServer({ settings: { webhookSecretCacheTtl: Duration.minutes(5) } }), { excludeTestServices: true })(
  "forged GitHub deliveries, secrets kept",
  (it) => {
    it.effect("a forged delivery reads nothing while the kept secrets are fresh: 401 at once, the table locked", () =>
      Effect.gen(function* () {
        yield* configured("cost-org", 424242)
        // A genuine delivery: the secrets are read and kept.
        assert.strictEqual(
          (yield* deliver({ id: "cost-genuine", event: "pull_request", body: pullRequest })).status,
          202
        )
        const observer = yield* observerClient
        const answers = yield* whileLocked(
          observer,
          Effect.forEach(Array.from({ length: 50 }), () => forged(), { concurrency: 10 }).pipe(
            Effect.timeout(Duration.seconds(20))
          )
        )
        assert.lengthOf(answers, 50)
        for (const answer of answers) {
          assert.strictEqual(answer.status, 401, answer.text)
          assert.strictEqual((answer.json as { error: { code: string } }).error.code, "unauthorized")
        }
      })
    )
  }
)

layer(layerTestServer({ settings: { webhookSecretCacheTtl: Duration.millis(300) } }), { excludeTestServices: true })(
  "forged GitHub deliveries, secrets stale",
  (it) => {
    it.effect("once the kept secrets are stale, a flood of forged deliveries makes one read, not one each", () =>
      Effect.gen(function* () {
        yield* configured("cost-org-stale", 424243)
        assert.strictEqual(
          (yield* deliver({ id: "stale-genuine", event: "pull_request", body: pullRequest })).status,
          202
        )
        const observer = yield* observerClient
        const most = yield* whileLocked(
          observer,
          Effect.gen(function* () {
            const pending: Array<Fiber.Fiber<unknown>> = []
            // Batches of forged deliveries until one finds the secrets stale and reads them (bounded).
            const observed = yield* Effect.gen(function* () {
              for (let batch = 0; batch < 40; batch++) {
                for (let i = 0; i < 10; i++) pending.push(yield* Effect.forkChild(forged()))
                const waiting = yield* waitingReads(observer).pipe(Effect.delay(Duration.millis(100)))
                if (waiting > 0) return waiting
              }
              return 0
            })
            assert.isAbove(observed, 0, "no read of the secrets was ever made")
            // More forged deliveries join the read under way instead of starting their own.
            for (let i = 0; i < 20; i++) pending.push(yield* Effect.forkChild(forged()))
            let most = observed
            for (let look = 0; look < 5; look++)
              most = Math.max(most, yield* waitingReads(observer).pipe(Effect.delay(Duration.millis(60))))
            return { most, pending }
          })
        )
        yield* Fiber.joinAll(most.pending)
        assert.strictEqual(most.most, 1)
      })
    )
  }
)
