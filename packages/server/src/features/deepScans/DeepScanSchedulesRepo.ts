/**
 * Repositories' recurring deep scans (`sql/0036`): the cron expression, when it runs next, and what
 * its last occurrence did. `claim` is how the cluster's cron takes one due occurrence: the row
 * locked (SKIP LOCKED, so two runners never take the same one) in the caller's transaction, which
 * launches the scan and `advance`s the schedule, so an occurrence launches exactly one scan. Every
 * query filters by organization, but the cron's `due` listing, which spans the instance.
 */
import type { DeepScanSchedule } from "@bosun/domain"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"

interface Row {
  readonly organization_id: string
  readonly repository_id: string
  readonly cron: string
  readonly next_run_at: Date
  readonly last_run_at: Date | null
  readonly last_deep_scan_id: string | null
  readonly last_run_id: string | null
  readonly last_error: string | null
  readonly updated_at: Date
}

const toSchedule = (row: Row): DeepScanSchedule => ({
  repository_id: row.repository_id,
  cron: row.cron,
  next_run_at: row.next_run_at.toISOString(),
  last_run_at: row.last_run_at?.toISOString() ?? null,
  last_deep_scan_id: row.last_deep_scan_id,
  last_run_id: row.last_run_id,
  last_error: row.last_error,
  updated_at: row.updated_at.toISOString()
})

/** A due occurrence: whose schedule, and when it was due. */
export interface DueSchedule {
  readonly organizationId: string
  readonly repositoryId: string
  readonly cron: string
  readonly dueAt: Date
}

export class DeepScanSchedulesRepo extends Context.Service<
  DeepScanSchedulesRepo,
  {
    readonly find: (organizationId: string, repositoryId: string) => Effect.Effect<Option.Option<DeepScanSchedule>>
    /** Sets the repository's cron expression and its next occurrence. */
    readonly put: (
      organizationId: string,
      repositoryId: string,
      schedule: { readonly cron: string; readonly nextRunAt: Date; readonly userId: string }
    ) => Effect.Effect<DeepScanSchedule>
    /** False when the repository had none. */
    readonly remove: (organizationId: string, repositoryId: string) => Effect.Effect<boolean>
    /** Up to `limit` schedules due now, across the instance, oldest first. */
    readonly due: (limit: number) => Effect.Effect<ReadonlyArray<DueSchedule>>
    /** Locks the schedule when it is still due (none when another runner took it or it changed). In the caller's transaction. */
    readonly claim: (due: DueSchedule) => Effect.Effect<Option.Option<DueSchedule>>
    /** Records what the occurrence did and when the next one is. In the caller's transaction. */
    readonly advance: (
      due: DueSchedule,
      outcome: {
        readonly nextRunAt: Date
        readonly deepScanId: string | null
        readonly runId: string | null
        readonly error: string | null
      }
    ) => Effect.Effect<void>
  }
>()("bosun/server/persistence/DeepScanSchedulesRepo") {
  static readonly layer = Layer.effect(
    DeepScanSchedulesRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const columns = sql.literal(
        "organization_id, repository_id, cron, next_run_at, last_run_at, last_deep_scan_id, last_run_id, last_error, updated_at"
      )
      return DeepScanSchedulesRepo.of({
        find: Effect.fn("DeepScanSchedulesRepo.find")(function* (organizationId: string, repositoryId: string) {
          const [row] = yield* sql<Row>`
            SELECT ${columns} FROM deep_scan_schedules
            WHERE organization_id = ${organizationId} AND repository_id = ${repositoryId}`.pipe(Effect.orDie)
          return Option.map(Option.fromUndefinedOr(row), toSchedule)
        }),
        put: Effect.fn("DeepScanSchedulesRepo.put")(function* (organizationId, repositoryId, schedule) {
          const [row] = yield* sql<Row>`
            INSERT INTO deep_scan_schedules (organization_id, repository_id, cron, next_run_at, updated_by)
            VALUES (${organizationId}, ${repositoryId}, ${schedule.cron}, ${schedule.nextRunAt}, ${schedule.userId})
            ON CONFLICT (repository_id) DO UPDATE SET cron = excluded.cron, next_run_at = excluded.next_run_at,
              updated_by = excluded.updated_by, updated_at = now()
            WHERE deep_scan_schedules.organization_id = ${organizationId}
            RETURNING ${columns}`.pipe(Effect.orDie)
          if (row === undefined) return yield* Effect.die(new Error("the schedule upsert returned no row"))
          return toSchedule(row)
        }),
        remove: Effect.fn("DeepScanSchedulesRepo.remove")(function* (organizationId: string, repositoryId: string) {
          const rows = yield* sql`
            DELETE FROM deep_scan_schedules WHERE organization_id = ${organizationId} AND repository_id = ${repositoryId}
            RETURNING repository_id`.pipe(Effect.orDie)
          return rows.length > 0
        }),
        due: Effect.fn("DeepScanSchedulesRepo.due")(function* (limit: number) {
          const rows = yield* sql<{ organization_id: string; repository_id: string; cron: string; next_run_at: Date }>`
            SELECT organization_id, repository_id, cron, next_run_at FROM deep_scan_schedules
            WHERE next_run_at <= now() ORDER BY next_run_at LIMIT ${limit}`.pipe(Effect.orDie)
          return rows.map((row) => ({
            organizationId: row.organization_id,
            repositoryId: row.repository_id,
            cron: row.cron,
            dueAt: row.next_run_at
          }))
        }),
        claim: Effect.fn("DeepScanSchedulesRepo.claim")(function* (due: DueSchedule) {
          const [row] = yield* sql<{ cron: string; next_run_at: Date }>`
            SELECT cron, next_run_at FROM deep_scan_schedules
            WHERE organization_id = ${due.organizationId} AND repository_id = ${due.repositoryId}
              AND next_run_at <= now()
            FOR UPDATE SKIP LOCKED`.pipe(Effect.orDie)
          if (row === undefined) return Option.none()
          return Option.some({ ...due, cron: row.cron, dueAt: row.next_run_at })
        }),
        advance: Effect.fn("DeepScanSchedulesRepo.advance")(function* (due: DueSchedule, outcome) {
          yield* sql`
            UPDATE deep_scan_schedules SET next_run_at = ${outcome.nextRunAt}, last_run_at = now(),
                   last_deep_scan_id = coalesce(${outcome.deepScanId}, last_deep_scan_id),
                   last_run_id = coalesce(${outcome.runId}, last_run_id), last_error = ${outcome.error},
                   updated_at = now()
            WHERE organization_id = ${due.organizationId} AND repository_id = ${due.repositoryId}`.pipe(Effect.orDie)
        })
      })
    })
  )
}
