/**
 * The Migrator and the migration gate (docs/interface.md: Coordinators, Migrator; Health endpoints;
 * Versioning 5).
 *
 * Migrations are the numbered `NNNN_name.sql` files of `sql/`, applied in order, each in one
 * transaction, recorded with a checksum in `bosun_migrations`. Every step that reads or writes
 * that table holds a transaction-scoped advisory lock, so several servers starting at once apply
 * each file exactly once. An applied file whose checksum changed is refused, never re-run.
 *
 * The server starts one background run at boot and retries it with backoff until it succeeds; the
 * gate in front of `/api/*` and `/readyz` waits a bounded time for that run and answers 503 while
 * it has not succeeded (a blocked or broken migration keeps the gate closed).
 */

import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { ErrorCodes, ServiceUnavailable } from "@bosun/domain"
import { Context, Data, Deferred, Duration, Effect, Layer, Ref, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/AppConfig.ts"
import { splitSqlStatements } from "./SqlStatements.ts"

/** The advisory lock every migration step holds (`pg_advisory_xact_lock`). Tests hold it to block migrations. */
export const MIGRATION_LOCK_KEY = 0x626f73756e01n

export class MigrationError extends Data.TaggedError("MigrationError")<{
  readonly file: string | undefined
  readonly message: string
  readonly cause?: unknown
}> {}

export interface MigrationFile {
  readonly id: number
  readonly name: string
  readonly checksum: string
  readonly statements: ReadonlyArray<string>
}

export interface MigrationReport {
  readonly applied: ReadonlyArray<string>
  readonly skipped: number
}

const FILE_PATTERN = /^(\d{4})_([a-z0-9_]+)\.sql$/

/** Reads and orders the migration files of a directory; a malformed set is an error, not a partial run. */
export const loadMigrations = Effect.fn("Migrator.loadMigrations")(function* (dir: string) {
  const names = yield* Effect.tryPromise({
    try: () => fs.readdir(dir),
    catch: (cause) => new MigrationError({ file: undefined, message: `cannot read migrations directory ${dir}`, cause })
  })
  const files: Array<MigrationFile> = []
  for (const name of names.filter((n) => n.endsWith(".sql")).sort()) {
    const match = FILE_PATTERN.exec(name)
    if (!match) {
      return yield* new MigrationError({ file: name, message: `${name} is not named NNNN_snake_case.sql` })
    }
    const id = Number(match[1])
    if (files.some((f) => f.id === id)) {
      return yield* new MigrationError({ file: name, message: `two migrations share the number ${match[1]}` })
    }
    const text = yield* Effect.tryPromise({
      try: () => fs.readFile(path.join(dir, name), "utf8"),
      catch: (cause) => new MigrationError({ file: name, message: `cannot read ${name}`, cause })
    })
    files.push({
      id,
      name,
      checksum: createHash("sha256").update(text).digest("hex"),
      statements: splitSqlStatements(text)
    })
  }
  return files
})

const lock = (sql: SqlClient.SqlClient) => sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`

const ensureTable = (sql: SqlClient.SqlClient) =>
  sql.withTransaction(
    Effect.gen(function* () {
      yield* lock(sql)
      yield* sql`CREATE TABLE IF NOT EXISTS bosun_migrations (
        id integer PRIMARY KEY,
        name text NOT NULL,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`
    })
  )

type Applied = { readonly id: number; readonly name: string; readonly checksum: string }

const checkUnchanged = (file: MigrationFile, applied: Applied) =>
  applied.checksum === file.checksum
    ? Effect.void
    : Effect.fail(
        new MigrationError({
          file: file.name,
          message: `${file.name} was changed after it was applied (checksum differs); add a new migration instead`
        })
      )

/** Applies one file unless another server already did; returns whether this call applied it. */
const applyFile = (sql: SqlClient.SqlClient, file: MigrationFile) =>
  sql
    .withTransaction(
      Effect.gen(function* () {
        yield* lock(sql)
        const [done] = yield* sql<Applied>`SELECT id, name, checksum FROM bosun_migrations WHERE id = ${file.id}`
        if (done) {
          yield* checkUnchanged(file, done)
          return false
        }
        for (const statement of file.statements) yield* sql.unsafe(statement)
        yield* sql`INSERT INTO bosun_migrations (id, name, checksum) VALUES (${file.id}, ${file.name}, ${file.checksum})`
        return true
      })
    )
    .pipe(
      Effect.catchTag("SqlError", (cause) =>
        Effect.fail(new MigrationError({ file: file.name, message: `${file.name} failed: ${cause.message}`, cause }))
      )
    )

/** Applies every pending migration of `dir` in order. Safe to run from several processes at once. */
export const runMigrations = Effect.fn("Migrator.run")(function* (dir: string) {
  const sql = yield* SqlClient.SqlClient
  const files = yield* loadMigrations(dir)
  yield* ensureTable(sql).pipe(
    Effect.catchTag("SqlError", (cause) =>
      Effect.fail(
        new MigrationError({ file: undefined, message: `cannot create bosun_migrations: ${cause.message}`, cause })
      )
    )
  )
  const appliedRows = yield* sql<Applied>`SELECT id, name, checksum FROM bosun_migrations ORDER BY id`.pipe(
    Effect.catchTag("SqlError", (cause) =>
      Effect.fail(
        new MigrationError({ file: undefined, message: `cannot read bosun_migrations: ${cause.message}`, cause })
      )
    )
  )
  const appliedById = new Map(appliedRows.map((row) => [row.id, row]))
  const applied: Array<string> = []
  let skipped = 0
  for (const file of files) {
    const done = appliedById.get(file.id)
    if (done) {
      yield* checkUnchanged(file, done)
      skipped++
      continue
    }
    const started = Date.now()
    if (yield* applyFile(sql, file)) {
      applied.push(file.name)
      yield* Effect.logInfo("migration_applied").pipe(
        Effect.annotateLogs({ file: file.name, duration_ms: Date.now() - started })
      )
    } else {
      skipped++
    }
  }
  return { applied, skipped } satisfies MigrationReport
})

export type GateState =
  | { readonly _tag: "Pending" }
  | { readonly _tag: "Failed"; readonly file: string | undefined }
  | { readonly _tag: "Ready" }

export class Migrator extends Context.Service<
  Migrator,
  {
    /**
     * Applies pending migrations now (what the boot-time run does; a second run applies nothing).
     * Workflows do not run it again: their first step waits for the boot-time run through
     * `awaitReady` (the actors' `MigrationGate` port).
     */
    readonly run: Effect.Effect<MigrationReport, MigrationError>
    /** Waits (bounded) for the boot-time run; fails with 503 while migrations are not applied. */
    readonly gate: Effect.Effect<void, ServiceUnavailable>
    /** Whether the gate has opened (it never closes again): the per-request fast path. */
    readonly isOpen: () => boolean
    /** Waits, unbounded, until the boot-time run has succeeded (background loops start after it). */
    readonly awaitReady: Effect.Effect<void>
    readonly state: Effect.Effect<GateState>
  }
>()("bosun/server/persistence/Migrator") {
  /**
   * Starts the boot-time run in the background (retried with backoff up to 30 s apart until it
   * succeeds) and exposes the gate. The run is interrupted when the layer is released.
   */
  static readonly layer = Layer.effect(
    Migrator,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const sql = yield* SqlClient.SqlClient
      const ready = yield* Deferred.make<void>()
      const state = yield* Ref.make<GateState>({ _tag: "Pending" })
      // Once open the gate stays open: the hot path is a field read, not a timer per request.
      let open = false
      const run = runMigrations(config.migrationsDir).pipe(Effect.provideService(SqlClient.SqlClient, sql))

      const boot = run.pipe(
        Effect.tapError((error) =>
          Ref.set(state, { _tag: "Failed", file: error.file }).pipe(
            Effect.andThen(
              Effect.logError("migration_failed").pipe(
                Effect.annotateLogs({ file: error.file ?? null, error: error.message })
              )
            )
          )
        ),
        Effect.retry(Schedule.min([Schedule.exponential(Duration.millis(500)), Schedule.spaced(Duration.seconds(30))])),
        Effect.tap((report) =>
          Effect.logInfo("migrations_ready").pipe(
            Effect.annotateLogs({ applied: report.applied.length, already_applied: report.skipped })
          )
        ),
        Effect.andThen(Ref.set(state, { _tag: "Ready" })),
        Effect.andThen(
          Effect.sync(() => {
            open = true
          })
        ),
        Effect.andThen(Deferred.succeed(ready, undefined))
      )
      yield* Effect.forkScoped(boot)

      const closed = Effect.flatMap(Ref.get(state), (current) =>
        Effect.fail(
          ServiceUnavailable.fromCode(
            ErrorCodes.migrationsPending,
            current._tag === "Failed"
              ? `Database migrations failed${current.file ? ` at ${current.file}` : ""}; see the server log`
              : "Database migrations are not applied yet; retry shortly"
          )
        )
      )
      const wait = Deferred.await(ready).pipe(
        Effect.timeoutOrElse({ duration: config.migrationGateWait, orElse: () => closed })
      )
      // A failed run fails the gate at once: probes get their 503 instead of timing out.
      const gate = Effect.suspend(() =>
        open ? Effect.void : Effect.flatMap(Ref.get(state), (s) => (s._tag === "Failed" ? closed : wait))
      )
      return Migrator.of({ run, gate, isOpen: () => open, awaitReady: Deferred.await(ready), state: Ref.get(state) })
    })
  )
}
