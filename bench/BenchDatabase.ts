/**
 * A fresh, migrated Postgres database for a benchmark: created on DATABASE_URL when set, else on
 * an embedded cluster in a temporary directory. Everything is released with `scope`; the
 * database is dropped by `drop` before that.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { EmbeddedPostgres } from "@bosun/platform/EmbeddedPostgres"
import { runMigrations } from "@bosun/server/platform/db/Migrator"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, type Scope } from "effect"
import { benchRoot } from "./Report.ts"

export const benchDatabase = (scope: Scope.Scope, options: { readonly maxConnections: number }) =>
  Effect.gen(function* () {
    const tmp = yield* Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "bosun-bench-")))
    yield* Effect.promise(() => fs.chmod(tmp, 0o711))
    let adminUrl = process.env.DATABASE_URL
    if (!adminUrl) {
      const pg = yield* Layer.buildWithScope(
        EmbeddedPostgres.layer({
          dataDir: path.join(tmp, "pg"),
          password: Redacted.make(randomBytes(12).toString("hex"))
        }),
        scope
      )
      adminUrl = Redacted.value(Context.get(pg, EmbeddedPostgres).url)
    }
    const name = `bosun_bench_${randomBytes(4).toString("hex")}`
    const admin = Context.get(
      yield* Layer.buildWithScope(PgClient.layer({ url: Redacted.make(adminUrl) }), scope),
      PgClient.PgClient
    )
    yield* admin.unsafe(`CREATE DATABASE ${name}`)
    const url = new URL(adminUrl)
    url.pathname = `/${name}`
    const layer = PgClient.layer({ url: Redacted.make(url.toString()), maxConnections: options.maxConnections })
    const context = yield* Layer.buildWithScope(layer, scope)
    yield* runMigrations(path.join(benchRoot, "sql")).pipe(Effect.provide(context))
    return {
      /** A pool layer of its own on the database (for code under test that builds its own). */
      layer,
      /** A pool already built in `scope`. */
      context,
      database: process.env.DATABASE_URL ? "DATABASE_URL" : "embedded",
      drop: admin
        .unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        .pipe(Effect.ignore, Effect.andThen(Effect.promise(() => fs.rm(tmp, { recursive: true, force: true }))))
    }
  })
