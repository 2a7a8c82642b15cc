/**
 * The Migrator against a real Postgres (docs/interface.md: Coordinators, Migrator;
 * Health endpoints): ordered files in transactions, exactly-once under concurrent starts, the gate
 * closed while a migration is blocked or broken, and applied files that must not change.
 */

import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { eventually, LogCapture, TestDatabase } from "@bosun/testing"
import { PgClient } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { type Context, Duration, Effect, Layer, Redacted } from "effect"
import type { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import type { AppSettings } from "../../../src/platform/config/AppConfig.ts"
import { MIGRATION_LOCK_KEY, runMigrations } from "../../../src/platform/db/Migrator.ts"
import { layerHttp, logsNamed, migrationsDir, request } from "../../support/TestServer.ts"

const tempMigrations = (files: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), "bosun-migrations-"))
      for (const name of await fs.readdir(migrationsDir)) {
        await fs.copyFile(path.join(migrationsDir, name), path.join(dir, name))
      }
      for (const [name, text] of Object.entries(files)) await fs.writeFile(path.join(dir, name), text)
      return dir
    }),
    (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
  )

/** Builds one server (its own pool) on the test database inside the current scope. */
const startServer = (dir: string, settings: Partial<AppSettings> = {}) =>
  Effect.gen(function* () {
    const db = yield* TestDatabase
    const stack = layerHttp({ settings: { migrationsDir: dir, ...settings } }).pipe(
      Layer.provide(PgClient.layer({ url: Redacted.make(db.url), maxConnections: 4 }))
    )
    return yield* Layer.build(stack)
  })

const inServer = <A, E, R>(server: Context.Context<never>, effect: Effect.Effect<A, E, R>) =>
  Effect.provide(effect, server) as Effect.Effect<A, E, Exclude<R, HttpServer.HttpServer>>

const pollUntil = <A, E, R>(effect: Effect.Effect<A, E, R>, done: (a: A) => boolean) =>
  Effect.orDie(eventually(effect, done))

const tableExists = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ exists: boolean }>`SELECT to_regclass(${name}) IS NOT NULL AS exists`.pipe(
      Effect.map((rows) => rows[0]?.exists === true),
      Effect.orDie
    )
  )

layer(Layer.mergeAll(TestDatabase.layer, LogCapture.layer), { excludeTestServices: true })("Migrator", (it) => {
  it.effect("keeps /readyz and /api/* at 503 while a migration is blocked, and opens once it can run", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const holder = yield* sql.reserve.pipe(Effect.orDie)
      yield* holder.executeRaw("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]).pipe(Effect.orDie)

      const server = yield* startServer(migrationsDir)
      const call = (p: string) => inServer(server, request(p))
      const health = yield* call("/healthz")
      assert.strictEqual(health.status, 200)
      const ready = yield* call("/readyz")
      assert.strictEqual(ready.status, 503)
      assert.deepStrictEqual(ready.json, {
        error: { code: "migrations_pending", message: "Database migrations are not applied yet; retry shortly" }
      })
      const api = yield* call("/api/v1/instance")
      assert.strictEqual(api.status, 503)
      assert.strictEqual(api.headers.get("retry-after"), "5")
      assert.isString(api.headers.get("x-request-id"))
      // The router ignores case, collapses slashes and decodes %xx; the gate must see what it sees.
      for (const bypass of ["//api/v1/instance", "/API/v1/instance", "/Api/V1/Instance", "/%61pi/v1/instance"]) {
        assert.strictEqual((yield* call(bypass)).status, 503, bypass)
      }
      assert.isFalse(yield* tableExists("organizations"))

      yield* holder.executeRaw("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).pipe(Effect.orDie)
      const after = yield* pollUntil(call("/readyz"), (r) => r.status === 200)
      assert.deepStrictEqual(after.json, { status: "ready" })
      assert.strictEqual((yield* call("/api/v1/instance")).status, 200)
      assert.isTrue(yield* tableExists("organizations"))
    })
  )

  it.effect("applies each migration exactly once when two servers start at the same time", () =>
    Effect.gen(function* () {
      const capture = yield* LogCapture
      yield* capture.clear
      const dir = yield* tempMigrations({
        "0900_slow.sql": "SELECT pg_sleep(0.2);\nCREATE TABLE probe_slow (id int PRIMARY KEY);",
        "0901_counter.sql": "CREATE TABLE probe_counter (n int);\nINSERT INTO probe_counter VALUES (1);"
      })
      const files = (yield* Effect.promise(() => fs.readdir(dir))).filter((f) => f.endsWith(".sql"))
      const [a, b] = yield* Effect.all([startServer(dir), startServer(dir)], { concurrency: 2 })
      for (const server of [a, b]) {
        const ready = yield* pollUntil(inServer(server, request("/readyz")), (r) => r.status === 200)
        assert.strictEqual(ready.status, 200)
      }
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ name: string }>`SELECT name FROM bosun_migrations ORDER BY id`.pipe(Effect.orDie)
      assert.deepStrictEqual(
        rows.map((r) => r.name),
        files.sort()
      )
      const counter = yield* sql<{ n: number }>`SELECT n FROM probe_counter`.pipe(Effect.orDie)
      assert.deepStrictEqual(counter, [{ n: 1 }])
      const applied = (yield* logsNamed("migration_applied")).map((r) => r.file)
      assert.deepStrictEqual(
        applied.filter((f) => f === "0900_slow.sql" || f === "0901_counter.sql"),
        ["0900_slow.sql", "0901_counter.sql"]
      )
    })
  )

  it.effect("keeps the gate closed on a broken migration, names the file in the log, and rolls it back", () =>
    Effect.gen(function* () {
      const capture = yield* LogCapture
      yield* capture.clear
      const dir = yield* tempMigrations({
        "0950_broken.sql": "CREATE TABLE half_done (id int);\nCREATE TABLE oops (;"
      })
      const server = yield* startServer(dir, { migrationGateWait: Duration.seconds(20) })
      const failed = yield* pollUntil(logsNamed("migration_failed"), (lines) => lines.length > 0)
      assert.strictEqual(failed[0]?.file, "0950_broken.sql")
      assert.strictEqual(failed[0]?.level, "error")
      // A failed run closes the gate at once: no waiting out the 20 s gate wait.
      const askedAt = Date.now()
      const ready = yield* inServer(server, request("/readyz"))
      assert.isBelow(Date.now() - askedAt, 5_000)
      assert.strictEqual(ready.status, 503)
      assert.deepStrictEqual(ready.json, {
        error: {
          code: "migrations_pending",
          message: "Database migrations failed at 0950_broken.sql; see the server log"
        }
      })
      assert.isFalse(yield* tableExists("half_done"))
    })
  )

  it.effect("refuses to run when an applied migration file has changed", () =>
    Effect.gen(function* () {
      const dir = yield* tempMigrations({ "0970_stable.sql": "CREATE TABLE stable (id int);" })
      yield* runMigrations(dir)
      yield* Effect.promise(() => fs.writeFile(path.join(dir, "0970_stable.sql"), "CREATE TABLE stable (id bigint);"))
      const error = yield* Effect.flip(runMigrations(dir))
      assert.strictEqual(error._tag, "MigrationError")
      assert.strictEqual(error.file, "0970_stable.sql")
      assert.include(error.message, "changed after it was applied")
    })
  )

  it.effect("rejects a file that does not follow the NNNN_name.sql pattern before running anything", () =>
    Effect.gen(function* () {
      const dir = yield* tempMigrations({ "7_bad-name.sql": "SELECT 1;" })
      const error = yield* Effect.flip(runMigrations(dir))
      assert.strictEqual(error.file, "7_bad-name.sql")
      assert.include(error.message, "NNNN_snake_case.sql")
    })
  )
})
