/**
 * `bosun doctor`, check 2: the database answers, and how its applied migrations compare with the
 * files of this build (pending, applied by a newer Bosun, changed after they were applied).
 *
 * It opens one connection whose session is read-only (`default_transaction_read_only`), so no
 * check that runs on it can write, and it applies nothing: unlike every other `bosun` command it
 * does not run the Migrator, and on the embedded default it connects only to a Postgres a running
 * server holds; it never starts one.
 */
import * as path from "node:path"
import { describeEndpoint, embeddedUrl, runningEndpoint } from "@bosun/platform/EmbeddedPostgres"
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { loadMigrations } from "../../platform/db/Migrator.ts"
import { CheckFailed, connectionProblem, describeCause, displayUrl, rootCode, seconds } from "./CheckResult.ts"
import type { DoctorSetup } from "./ConfigurationCheck.ts"

export const DATABASE = "Database"
export const MIGRATIONS = "Migrations"

export const CONNECT_TIMEOUT = Duration.seconds(5)

const startAgain = "start Bosun (`npm start`) and run doctor while it runs, or set DATABASE_URL"

/** Where the database is and the key ring its secrets open with, or why doctor cannot reach one without starting it. */
const target = Effect.fn("Doctor.databaseTarget")(function* ({ settings, instance }: DoctorSetup) {
  // Only the embedded default can lack instance secrets: with DATABASE_URL the configuration requires a key.
  const embedded = Option.flatMap(instance, (i) => i.embedded)
  if (Option.isNone(instance) || (Option.isNone(settings.databaseUrl) && Option.isNone(embedded))) {
    return yield* new CheckFailed({
      message: `DATABASE_URL is unset and ${settings.dataDir} has no secrets.json: this embedded instance has never started, so it has no database yet (doctor does not start one)`,
      fix: startAgain
    })
  }
  const masterKey = instance.value.masterKey
  if (Option.isSome(settings.databaseUrl)) {
    const url = settings.databaseUrl.value
    return { url, shown: displayUrl(Redacted.value(url)), embedded: false, masterKey }
  }
  const dataDir = path.join(settings.dataDir, "pg")
  const endpoint = yield* runningEndpoint(dataDir)
  if (Option.isNone(endpoint) || Option.isNone(embedded)) {
    return yield* new CheckFailed({
      message: `DATABASE_URL is unset and no embedded Postgres runs on ${dataDir} (the server starts it; doctor does not)`,
      fix: startAgain
    })
  }
  return {
    url: embeddedUrl(embedded.value.postgresPassword, endpoint.value),
    shown: `the embedded Postgres on ${describeEndpoint(endpoint.value)} (data in ${dataDir})`,
    embedded: true,
    masterKey
  }
})

const noAnswer = (shown: string) =>
  new CheckFailed({
    message: `${shown} did not answer within ${seconds(CONNECT_TIMEOUT)}`,
    fix: "check that the address is Postgres's and that no firewall drops the connection"
  })

const connectFailure = (shown: string, embedded: boolean) => (error: unknown) => {
  if (/timed out/i.test(describeCause(error))) return noAnswer(shown)
  const code = rootCode(error)
  const where = embedded ? "the embedded Postgres" : "DATABASE_URL"
  const network = connectionProblem(code)
  if (network !== undefined) {
    return new CheckFailed({
      message: `cannot connect to ${shown}: ${network}`,
      fix: embedded ? startAgain : `start Postgres there, or correct the host and port in ${where}`
    })
  }
  if (code === "28P01" || code === "28000") {
    return new CheckFailed({
      message: `${shown} refused the login: ${describeCause(error)}`,
      fix: `correct the user and password in ${where} (and pg_hba.conf, if the server restricts hosts)`
    })
  }
  if (code === "3D000") {
    return new CheckFailed({
      message: `${shown}: ${describeCause(error)}`,
      fix: `create that database, or correct its name in ${where}`
    })
  }
  return new CheckFailed({
    message: `cannot connect to ${shown}: ${describeCause(error)}`,
    fix: `check ${where} and that Postgres accepts connections from this machine`
  })
}

/**
 * One read-only connection to the configured database, for the scope, the words naming it and the
 * key ring of its secrets.
 * Fails with `CheckFailed` within `CONNECT_TIMEOUT`: a database that is down is reported, not waited for.
 */
export const openDatabase = Effect.fn("Doctor.openDatabase")(function* (setup: DoctorSetup) {
  const { url, shown, embedded, masterKey } = yield* target(setup)
  const context = yield* Layer.build(
    PgClient.layerFrom(
      PgClient.makeClient({
        url,
        connectTimeout: CONNECT_TIMEOUT,
        applicationName: "bosun-doctor",
        startupParameters: { default_transaction_read_only: "on" }
      })
    )
  ).pipe(
    Effect.mapError(connectFailure(shown, embedded)),
    Effect.timeoutOrElse({ duration: CONNECT_TIMEOUT, orElse: () => Effect.fail(noAnswer(shown)) })
  )
  const sql = Context.get(context, SqlClient.SqlClient)
  const [row] = yield* sql<{ version: string }>`SELECT current_setting('server_version') AS version`.pipe(
    Effect.mapError(connectFailure(shown, embedded)),
    Effect.timeoutOrElse({ duration: CONNECT_TIMEOUT, orElse: () => Effect.fail(noAnswer(shown)) })
  )
  return {
    context,
    masterKey,
    description: `${shown} answers (PostgreSQL ${row?.version.split(" ")[0] ?? "of unknown version"}), read-only session`
  }
})

/**
 * Which of `tables` exist: a table a pending migration has yet to create is reported by the
 * Migrations line, not as a failure of the checks that read it.
 */
export const presentTables = Effect.fn("Doctor.presentTables")(function* (tables: ReadonlyArray<string>) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ name: string }>`
    SELECT relname AS name FROM pg_class
    WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace AND relname IN ${sql.in(tables)}`.pipe(Effect.orDie)
  return new Set(rows.map((row) => row.name))
})

type Applied = { readonly id: number; readonly name: string; readonly checksum: string }

const names = (items: ReadonlyArray<{ readonly name: string }>) => items.map((item) => item.name).join(", ")

/**
 * Compares `bosun_migrations` with the files of `dir`, as the Migrator would before applying
 * anything: pending files, rows no file matches (a newer Bosun applied them), changed checksums.
 */
export const checkMigrations = Effect.fn("Doctor.migrations")(function* (dir: string) {
  const sql = yield* SqlClient.SqlClient
  const files = yield* loadMigrations(dir).pipe(
    Effect.mapError(
      (error) =>
        new CheckFailed({
          message: `the migration files cannot be read: ${error.message}`,
          fix: "deploy the exact sql/ directory of a release, and leave BOSUN_MIGRATIONS_DIR unset"
        })
    )
  )
  const unreadable = (error: unknown) =>
    new CheckFailed({
      message: `cannot read bosun_migrations: ${describeCause(error)}`,
      fix: "give the database user of DATABASE_URL read access to it"
    })
  const [table] = yield* sql<{ present: boolean }>`SELECT to_regclass('bosun_migrations') IS NOT NULL AS present`.pipe(
    Effect.mapError(unreadable)
  )
  const applied: ReadonlyArray<Applied> = table?.present
    ? yield* sql<Applied>`SELECT id, name, checksum FROM bosun_migrations ORDER BY id`.pipe(Effect.mapError(unreadable))
    : []
  const appliedById = new Map(applied.map((row) => [row.id, row]))
  const fileIds = new Set(files.map((file) => file.id))
  const pending = files.filter((file) => !appliedById.has(file.id))
  const unknown = applied.filter((row) => !fileIds.has(row.id))
  const changed = files.filter((file) => {
    const row = appliedById.get(file.id)
    return row !== undefined && row.checksum !== file.checksum
  })
  if (pending.length === 0 && unknown.length === 0 && changed.length === 0) {
    return `all ${files.length} applied (the last: ${files.at(-1)?.name ?? "none"})`
  }
  const problems: Array<string> = []
  const fixes: Array<string> = []
  if (pending.length > 0) {
    problems.push(
      pending.length === files.length
        ? `none of the ${files.length} migrations is applied (an empty database)`
        : `${pending.length} of ${files.length} not applied yet: ${names(pending)}`
    )
    fixes.push(
      "start this Bosun version: it applies them at boot (until then /api/* and /readyz answer 503 migrations_pending)"
    )
  }
  if (unknown.length > 0) {
    problems.push(`${unknown.length} applied by a newer Bosun and unknown to this one: ${names(unknown)}`)
    fixes.push("run the Bosun version that applied them (this one is older than the database), or restore a backup")
  }
  if (changed.length > 0) {
    problems.push(`${changed.length} changed after they were applied (checksum differs): ${names(changed)}`)
    fixes.push("deploy the exact sql/ files of a release; never edit an applied migration")
  }
  return yield* new CheckFailed({ message: problems.join("; "), fix: fixes.join("; ") })
})
