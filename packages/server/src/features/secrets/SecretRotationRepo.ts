/**
 * The SQL of master-key rotation (docs/interface.md: Secret-rotation procedure 4-7): the `secret_rotations`
 * runs with their lease, and batch reads and compare-and-swap writes over the sealed columns.
 *
 * A batch's re-sealed envelopes and the run's progress commit in one transaction, and only while
 * the caller still holds the run's lease, so a resumed run continues exactly after the last
 * committed batch. Each envelope is replaced only if it is still the one that was read (`col =
 * old`): an envelope already re-sealed, by this run or any other, is never sealed twice.
 */
import type { SecretRotationRun, SecretRotationStatus } from "@bosun/domain"
import { Context, Data, Duration, Effect, Layer, Option } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { keyVersionBytes } from "../../platform/crypto/Envelope.ts"
import type { SealedColumn } from "../../platform/crypto/SealedColumns.ts"

/** The run was taken over by another worker (its lease expired): stop working on it. */
export class LeaseLost extends Data.TaggedError("LeaseLost")<{ readonly runId: string }> {}

/** A new run could not be created because this one is queued or running. */
export class RotationActive extends Data.TaggedError("RotationActive")<{ readonly run: RotationRow }> {}

export interface RotationRow extends SecretRotationRun {
  readonly target_key_fingerprint: string
  readonly cursor_column: number
  readonly cursor_row_id: string | null
}

export interface SealedRow {
  readonly id: string
  readonly envelope: Uint8Array
}

export interface BatchProgress {
  readonly runId: string
  readonly owner: string
  readonly cursorColumn: number
  readonly cursorRowId: string | null
  readonly failed: number
}

export interface FinishOutcome {
  readonly status: SecretRotationStatus
  readonly remaining: number
  readonly error: string | null
  /** Unreadable envelopes not yet counted by a committed batch. */
  readonly addFailed?: number
}

type Row = Omit<RotationRow, "created_at" | "started_at" | "finished_at"> & {
  readonly created_at: Date | string
  readonly started_at: Date | string | null
  readonly finished_at: Date | string | null
}

const iso = (value: Date | string) => (value instanceof Date ? value.toISOString() : new Date(value).toISOString())

const toRun = (row: Row): RotationRow => ({
  ...row,
  created_at: iso(row.created_at),
  started_at: row.started_at === null ? null : iso(row.started_at),
  finished_at: row.finished_at === null ? null : iso(row.finished_at)
})

type Sql = SqlClient.SqlClient

/** The columns of `secret_rotations` every read of a run selects. */
const runFields = (sql: Sql) =>
  sql.literal(
    `id, status, dry_run, batch_size, target_key_version, target_key_fingerprint, total_secrets,
         processed_secrets, remaining, failed_secrets, error, cursor_column, cursor_row_id, created_at,
         started_at, finished_at`
  )

const leaseSeconds = (lease: Duration.Duration) => Duration.toMillis(lease) / 1000

/** Runs read back, and the creation of one while no other is queued or running. */
const runRecords = (sql: Sql, fields: Statement.Fragment) => {
  const find = Effect.fn("SecretRotationRepo.find")(function* (id: string) {
    const [row] = yield* sql<Row>`SELECT ${fields} FROM secret_rotations WHERE id = ${id}`.pipe(Effect.orDie)
    return Option.map(Option.fromUndefinedOr(row), toRun)
  })

  const active = Effect.gen(function* () {
    const [row] = yield* sql<Row>`
      SELECT ${fields} FROM secret_rotations WHERE status IN ('QUEUED', 'RUNNING')`.pipe(Effect.orDie)
    return Option.map(Option.fromUndefinedOr(row), toRun)
  }).pipe(Effect.withSpan("SecretRotationRepo.active"))

  const create = Effect.fn("SecretRotationRepo.create")(function* (options: {
    readonly dryRun: boolean
    readonly batchSize: number
    readonly targetKeyVersion: number
    readonly targetKeyFingerprint: string
  }) {
    // The partial unique index admits one queued-or-running run; a concurrent create loses here.
    const rows = yield* sql<Row>`
      INSERT INTO secret_rotations (dry_run, batch_size, target_key_version, target_key_fingerprint)
      VALUES (${options.dryRun}, ${options.batchSize}, ${options.targetKeyVersion}, ${options.targetKeyFingerprint})
      ON CONFLICT DO NOTHING
      RETURNING ${fields}`.pipe(Effect.orDie)
    const [row] = rows
    if (row !== undefined) return toRun(row)
    const running = yield* active
    if (Option.isSome(running)) return yield* new RotationActive({ run: running.value })
    // The other run finished between the two statements: try once more.
    const [retried] = yield* sql<Row>`
      INSERT INTO secret_rotations (dry_run, batch_size, target_key_version, target_key_fingerprint)
      VALUES (${options.dryRun}, ${options.batchSize}, ${options.targetKeyVersion}, ${options.targetKeyFingerprint})
      RETURNING ${fields}`.pipe(Effect.orDie)
    if (retried === undefined) return yield* Effect.die(new Error("INSERT returned no row"))
    return toRun(retried)
  })

  return { find, active, create }
}

/** A run's lease: taken, checked by each write of the run's state, and given up. */
const runLeases = (sql: Sql, fields: Statement.Fragment) => {
  const claim = Effect.fn("SecretRotationRepo.claim")(function* (owner: string, lease: Duration.Duration) {
    const [row] = yield* sql<Row>`
      UPDATE secret_rotations SET
        status = 'RUNNING', lease_owner = ${owner},
        lease_expires_at = now() + make_interval(secs => ${leaseSeconds(lease)}),
        started_at = coalesce(started_at, now())
      WHERE id = (
        SELECT id FROM secret_rotations
        WHERE status = 'QUEUED' OR (status = 'RUNNING' AND lease_expires_at < now())
        ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING ${fields}`.pipe(Effect.orDie)
    return Option.map(Option.fromUndefinedOr(row), toRun)
  })

  const begin = Effect.fn("SecretRotationRepo.begin")(function* (
    runId: string,
    owner: string,
    totals: { readonly total: number; readonly remaining: number }
  ) {
    const rows = yield* sql`
      UPDATE secret_rotations SET total_secrets = ${totals.total}, remaining = ${totals.remaining}
      WHERE id = ${runId} AND lease_owner = ${owner} AND status = 'RUNNING'
      RETURNING id`.pipe(Effect.orDie)
    if (rows.length === 0) return yield* new LeaseLost({ runId })
  })

  const finish = Effect.fn("SecretRotationRepo.finish")(function* (
    runId: string,
    owner: string,
    outcome: FinishOutcome
  ) {
    const rows = yield* sql`
      UPDATE secret_rotations SET
        status = ${outcome.status}, remaining = ${outcome.remaining}, error = ${outcome.error},
        failed_secrets = failed_secrets + ${outcome.addFailed ?? 0},
        finished_at = now(), lease_owner = NULL, lease_expires_at = NULL
      WHERE id = ${runId} AND lease_owner = ${owner} AND status = 'RUNNING'
      RETURNING id`.pipe(Effect.orDie)
    if (rows.length === 0) return yield* new LeaseLost({ runId })
  })

  const release = Effect.fn("SecretRotationRepo.release")(function* (runId: string, owner: string) {
    yield* sql`UPDATE secret_rotations SET lease_expires_at = now()
               WHERE id = ${runId} AND lease_owner = ${owner} AND status = 'RUNNING'`.pipe(Effect.orDie)
  })

  return { claim, begin, finish, release }
}

/** The sealed columns: their envelopes counted by key version, read in batches, and swapped. */
const sealedColumns = (sql: Sql) => {
  const versions = Effect.fn("SecretRotationRepo.versions")(function* (sealed: ReadonlyArray<SealedColumn>) {
    const census = new Map<number, number>()
    for (const column of sealed) {
      const rows = yield* sql<{ version: Uint8Array; n: string }>`
        SELECT substring(${sql(column.column)} from 2 for 4) AS version, count(*)::text AS n
        FROM ${sql(column.table)} WHERE ${sql(column.column)} IS NOT NULL GROUP BY 1`.pipe(Effect.orDie)
      for (const row of rows) {
        // A value too short to hold a version is not an envelope: version 0, never in a ring.
        const version = row.version.length === 4 ? Buffer.from(row.version).readUInt32BE(0) : 0
        census.set(version, (census.get(version) ?? 0) + Number(row.n))
      }
    }
    return census
  })

  const count = Effect.fn("SecretRotationRepo.count")(function* (
    sealed: ReadonlyArray<SealedColumn>,
    keyVersion: number
  ) {
    const version = keyVersionBytes(keyVersion)
    let total = 0
    let notUnder = 0
    for (const column of sealed) {
      const [row] = yield* sql<{ total: string; not_under: string }>`
        SELECT count(${sql(column.column)})::text AS total,
               count(*) FILTER (WHERE substring(${sql(column.column)} from 2 for 4) <> ${version})::text AS not_under
        FROM ${sql(column.table)}`.pipe(Effect.orDie)
      total += Number(row?.total ?? 0)
      notUnder += Number(row?.not_under ?? 0)
    }
    return { total, notUnder }
  })

  const readBatch = Effect.fn("SecretRotationRepo.readBatch")(function* (
    column: SealedColumn,
    afterId: string | null,
    limit: number,
    notUnder: number | undefined
  ) {
    const id = sql(column.idColumn)
    const value = sql(column.column)
    const after = afterId === null ? sql`TRUE` : sql`${id}::text > ${afterId}`
    const version =
      notUnder === undefined ? sql`TRUE` : sql`substring(${value} from 2 for 4) <> ${keyVersionBytes(notUnder)}`
    return yield* sql<SealedRow>`
      SELECT ${id}::text AS id, ${value} AS envelope FROM ${sql(column.table)}
      WHERE ${value} IS NOT NULL AND ${after} AND ${version}
      ORDER BY ${id}::text LIMIT ${limit}`.pipe(Effect.orDie)
  })

  const commitBatch = Effect.fn("SecretRotationRepo.commitBatch")(function* (
    column: SealedColumn,
    swaps: ReadonlyArray<{ readonly id: string; readonly old: Uint8Array; readonly next: Uint8Array }>,
    progress: BatchProgress,
    lease: Duration.Duration
  ) {
    return yield* sql
      .withTransaction(
        Effect.gen(function* () {
          const swapped =
            swaps.length === 0
              ? []
              : yield* sql<{ id: string }>`
                  UPDATE ${sql(column.table)} AS t SET ${sql(column.column)} = v.next
                  FROM unnest(${swaps.map((s) => s.id)}::text[], ${swaps.map((s) => s.old)}::bytea[],
                              ${swaps.map((s) => s.next)}::bytea[]) AS v(id, old, next)
                  WHERE t.${sql(column.idColumn)}::text = v.id AND t.${sql(column.column)} = v.old
                  RETURNING v.id`
          const renewed = yield* sql`
            UPDATE secret_rotations SET
              processed_secrets = processed_secrets + ${swapped.length},
              remaining = greatest(remaining - ${swapped.length}, 0),
              failed_secrets = failed_secrets + ${progress.failed},
              cursor_column = ${progress.cursorColumn}, cursor_row_id = ${progress.cursorRowId},
              lease_expires_at = now() + make_interval(secs => ${leaseSeconds(lease)})
            WHERE id = ${progress.runId} AND lease_owner = ${progress.owner} AND status = 'RUNNING'
            RETURNING id`
          // Rolls the swaps back with the transaction: the new lease holder redoes this batch.
          if (renewed.length === 0) return yield* new LeaseLost({ runId: progress.runId })
          return swapped.length
        })
      )
      .pipe(Effect.catchTag("SqlError", Effect.die))
  })

  return { versions, count, readBatch, commitBatch }
}

export class SecretRotationRepo extends Context.Service<
  SecretRotationRepo,
  {
    readonly create: (options: {
      readonly dryRun: boolean
      readonly batchSize: number
      readonly targetKeyVersion: number
      readonly targetKeyFingerprint: string
    }) => Effect.Effect<RotationRow, RotationActive>
    readonly find: (id: string) => Effect.Effect<Option.Option<RotationRow>>
    /** The queued or running run, if any. */
    readonly active: Effect.Effect<Option.Option<RotationRow>>
    /** Takes the lease of a queued run, or of a running one whose worker stopped renewing it. */
    readonly claim: (owner: string, lease: Duration.Duration) => Effect.Effect<Option.Option<RotationRow>>
    /** Sets the totals of a run each time it is claimed (a resumed run counts afresh). */
    readonly begin: (
      runId: string,
      owner: string,
      totals: { readonly total: number; readonly remaining: number }
    ) => Effect.Effect<void, LeaseLost>
    readonly finish: (runId: string, owner: string, outcome: FinishOutcome) => Effect.Effect<void, LeaseLost>
    /** How many envelopes of the sealed columns are under each key version. */
    readonly versions: (columns: ReadonlyArray<SealedColumn>) => Effect.Effect<ReadonlyMap<number, number>>
    /** Gives the lease up at once (a worker stopping), so another worker resumes without waiting. */
    readonly release: (runId: string, owner: string) => Effect.Effect<void>
    /** Envelope counts over every sealed column: all of them, and those not under `keyVersion`. */
    readonly count: (
      columns: ReadonlyArray<SealedColumn>,
      keyVersion: number
    ) => Effect.Effect<{ readonly total: number; readonly notUnder: number }>
    /** The next rows of `column` after `afterId`, in id order; only those not under `notUnder` when given. */
    readonly readBatch: (
      column: SealedColumn,
      afterId: string | null,
      limit: number,
      notUnder: number | undefined
    ) => Effect.Effect<ReadonlyArray<SealedRow>>
    /**
     * Commits a batch: swaps each envelope still equal to the one read, then records progress
     * (processed += swapped) and renews the lease. Returns how many envelopes were swapped.
     */
    readonly commitBatch: (
      column: SealedColumn,
      swaps: ReadonlyArray<{ readonly id: string; readonly old: Uint8Array; readonly next: Uint8Array }>,
      progress: BatchProgress,
      lease: Duration.Duration
    ) => Effect.Effect<number, LeaseLost>
  }
>()("bosun/server/persistence/SecretRotationRepo") {
  static readonly layer = Layer.effect(
    SecretRotationRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const fields = runFields(sql)
      return SecretRotationRepo.of({
        ...runRecords(sql, fields),
        ...runLeases(sql, fields),
        ...sealedColumns(sql)
      })
    })
  )
}
