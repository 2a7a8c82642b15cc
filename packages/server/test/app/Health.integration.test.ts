/**
 * Health endpoints (docs/interface.md: Health endpoints; Errors 4): `/healthz` answers whenever the process
 * answers HTTP; `/readyz` is 200 after migrations and a `SELECT 1`, 503 only when that fails.
 */
import { dropDatabase, eventually, TestDatabase } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { layerTestServer, request } from "../support/TestServer.ts"

layer(layerTestServer(), { excludeTestServices: true })("health", (it) => {
  it.effect("answers /healthz with 200 and /readyz with 200 once migrated", () =>
    Effect.gen(function* () {
      const health = yield* request("/healthz")
      assert.strictEqual(health.status, 200)
      assert.deepStrictEqual(health.json, { status: "ok" })
      const ready = yield* eventually(request("/readyz"), (r) => r.status === 200)
      assert.deepStrictEqual(ready.json, { status: "ready" })
      assert.strictEqual(ready.headers.get("content-type"), "application/json")
    })
  )

  it.effect("answers /readyz with 503 database_unavailable when the database is gone, /healthz still 200", () =>
    Effect.gen(function* () {
      yield* eventually(request("/readyz"), (r) => r.status === 200)
      const db = yield* TestDatabase
      yield* dropDatabase(db.name)
      const ready = yield* eventually(request("/readyz"), (r) => r.status === 503)
      assert.deepStrictEqual(ready.json, {
        error: { code: "database_unavailable", message: "The database did not answer" }
      })
      assert.strictEqual((yield* request("/healthz")).status, 200)
    })
  )
})
