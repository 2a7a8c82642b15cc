/**
 * The test harness itself: each `TestDatabase` is a fresh, empty, separate database, and the
 * Redis the global setup found or started answers.
 */

import * as net from "node:net"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { provided } from "../src/Provided.ts"
import { TestDatabase } from "../src/TestDatabase.ts"

layer(TestDatabase.layer, { excludeTestServices: true })("TestDatabase", (it) => {
  it.effect("is a fresh database of its own", () =>
    Effect.gen(function* () {
      const db = yield* TestDatabase
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ name: string; tables: number }>`
        SELECT current_database() AS name,
               (SELECT count(*)::int FROM information_schema.tables WHERE table_schema = 'public') AS tables`
      assert.strictEqual(row?.name, db.name)
      assert.match(db.name, /^bosun_t_[0-9a-f]{12}$/)
      assert.strictEqual(row?.tables, 0)
    })
  )
})

const redisUrl = provided("bosun.redisUrl")

describe.skipIf(redisUrl === null)(`Redis (${provided("bosun.redisMissing") ?? "available"})`, () => {
  it("answers PING", async () => {
    const url = new URL(redisUrl ?? "redis://127.0.0.1:6379")
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = net.connect({ host: url.hostname, port: Number(url.port || 6379) })
      socket.once("error", reject)
      socket.once("connect", () => socket.write("PING\r\n"))
      socket.once("data", (data) => {
        socket.destroy()
        resolve(data.toString())
      })
    })
    assert.strictEqual(reply, "+PONG\r\n")
  })
})
