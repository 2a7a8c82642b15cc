/**
 * A fresh Postgres database per test file (or per layer build), dropped afterwards, on the server
 * the global setup provides. Files therefore run in parallel without sharing state.
 */

import { randomBytes } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import type { SqlClient } from "effect/sql"
import { provided } from "./Provided.ts"

const adminUrl = () => provided("bosun.pgAdminUrl")

/** The URL of database `name` on the test server. */
export const databaseUrl = (name: string): string => {
  const url = new URL(adminUrl())
  url.pathname = `/${name}`
  return url.toString()
}

const withAdmin = <A, E>(f: (sql: PgClient.PgClient) => Effect.Effect<A, E>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(PgClient.layer({ url: Redacted.make(adminUrl()), maxConnections: 1 }))
      return yield* f(Context.get(context, PgClient.PgClient))
    })
  )

/** Drops a test database now, closing every connection to it (for tests of a lost database). */
export const dropDatabase = (name: string) =>
  withAdmin((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).pipe(Effect.orDie)

/** Creates a uniquely named empty database and drops it (forcibly) when the scope closes. */
export const freshDatabase = Effect.acquireRelease(
  Effect.gen(function* () {
    const name = `bosun_t_${randomBytes(6).toString("hex")}`
    yield* withAdmin((sql) =>
      sql
        .unsafe(`CREATE DATABASE ${name}`)
        // A test database need not survive a crash of Postgres itself: commits that wait for no
        // fsync keep write-heavy tests (20,000 queue messages) from timing out on slow disks.
        .pipe(Effect.andThen(sql.unsafe(`ALTER DATABASE ${name} SET synchronous_commit = off`)))
    ).pipe(Effect.orDie)
    return { name, url: databaseUrl(name) }
  }),
  ({ name }) => dropDatabase(name)
)

export class TestDatabase extends Context.Service<TestDatabase, { readonly name: string; readonly url: string }>()(
  "bosun/testing/TestDatabase"
) {
  /** A fresh database, its name and URL, and a `SqlClient`/`PgClient` pool on it. */
  static readonly layer: Layer.Layer<TestDatabase | PgClient.PgClient | SqlClient.SqlClient> = Layer.unwrap(
    Effect.map(freshDatabase, (db) =>
      PgClient.layer({ url: Redacted.make(db.url), maxConnections: 5 }).pipe(
        Layer.orDie,
        Layer.merge(Layer.succeed(TestDatabase, TestDatabase.of(db)))
      )
    )
  )
}
