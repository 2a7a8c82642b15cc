/**
 * Deep scans (spec: Resources "Deep scan"). A scan and its workflow run (type `deep_scan`,
 * status QUEUED) are written by one statement, so neither exists without the other; reads join
 * the run for the status, timing, model and error, and the repository for its name. Every query
 * filters by organization.
 */
import type { DeepScan } from "@bosun/domain"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { iso } from "./Timestamps.ts"

interface DeepScanRow {
  readonly id: string
  readonly run_id: string
  readonly repository_id: string
  readonly repository_name: string
  readonly repository_owner: string
  readonly head_sha: string
  readonly completion_status: DeepScan["completion_status"]
  readonly finding_count: number
  readonly risk_level: DeepScan["risk_level"]
  readonly accepted_count: number
  readonly pending_count: number
  readonly rejected_count: number
  readonly summary: string | null
  readonly fix_work_item_id: string | null
  readonly status: DeepScan["status"]
  readonly model: string | null
  readonly provider: string | null
  readonly error_code: string | null
  readonly error_message: string | null
  readonly created_at: Date
  readonly started_at: Date | null
  readonly finished_at: Date | null
}

const toDeepScan = (row: DeepScanRow): DeepScan => ({
  completion_status: row.completion_status,
  created_at: row.created_at.toISOString(),
  decision_counts: { accepted: row.accepted_count, pending: row.pending_count, rejected: row.rejected_count },
  error_code: row.error_code,
  error_message: row.error_message,
  finding_count: row.finding_count,
  finished_at: iso(row.finished_at),
  fix_work_item_id: row.fix_work_item_id,
  head_sha: row.head_sha,
  id: row.id,
  model: row.model,
  provider: row.provider,
  repository: { id: row.repository_id, name: row.repository_name, owner: row.repository_owner },
  risk_level: row.risk_level,
  run_id: row.run_id,
  started_at: iso(row.started_at),
  status: row.status,
  summary: row.summary
})

export interface DeepScanLaunch {
  readonly repositoryId: string
  readonly defaultBranch: string
  readonly headSha: string
  readonly requestedBy: string
}

export class DeepScansRepo extends Context.Service<
  DeepScansRepo,
  {
    /** Newest first; only `repositoryId`'s when given. */
    readonly list: (
      organizationId: string,
      options: { readonly repositoryId?: string | undefined; readonly limit: number }
    ) => Effect.Effect<ReadonlyArray<DeepScan>>
    readonly find: (organizationId: string, deepScanId: string) => Effect.Effect<Option.Option<DeepScan>>
    /**
     * The scan of this repository at this commit that has not finished yet, if there is one: a
     * second launch at the same head joins it instead of paying for the same audit twice.
     */
    readonly findUnfinished: (
      organizationId: string,
      repositoryId: string,
      headSha: string
    ) => Effect.Effect<Option.Option<{ readonly id: string }>>
    /** Writes the scan and its queued run (the scheduler picks it up); returns the scan's id. */
    readonly create: (organizationId: string, launch: DeepScanLaunch) => Effect.Effect<{ readonly id: string }>
  }
>()("bosun/server/persistence/DeepScansRepo") {
  static readonly layer = Layer.effect(
    DeepScansRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const select = sql.literal(`
        SELECT s.id, s.run_id, s.repository_id, r.name AS repository_name, r.owner AS repository_owner,
               s.head_sha, s.completion_status, s.finding_count, s.risk_level, s.accepted_count,
               s.pending_count, s.rejected_count, s.summary, s.fix_work_item_id, w.status, w.model,
               w.provider, w.error_code, w.error_message, s.created_at, w.started_at, w.finished_at
        FROM deep_scans s
        JOIN workflow_runs w ON w.id = s.run_id AND w.organization_id = s.organization_id
        JOIN repositories r ON r.id = s.repository_id AND r.organization_id = s.organization_id`)

      return DeepScansRepo.of({
        list: Effect.fn("DeepScansRepo.list")(function* (organizationId, options) {
          const rows = yield* sql<DeepScanRow>`
            ${select}
            WHERE s.organization_id = ${organizationId}
              ${options.repositoryId === undefined ? sql`` : sql`AND s.repository_id = ${options.repositoryId}`}
            ORDER BY s.created_at DESC, s.id DESC
            LIMIT ${options.limit}`.pipe(Effect.orDie)
          return rows.map(toDeepScan)
        }),
        find: Effect.fn("DeepScansRepo.find")(function* (organizationId, deepScanId) {
          const [row] = yield* sql<DeepScanRow>`
            ${select}
            WHERE s.organization_id = ${organizationId} AND s.id = ${deepScanId}`.pipe(Effect.orDie)
          return Option.map(Option.fromNullishOr(row), toDeepScan)
        }),
        findUnfinished: Effect.fn("DeepScansRepo.findUnfinished")(function* (organizationId, repositoryId, headSha) {
          const [row] = yield* sql<{ id: string }>`
            SELECT s.id FROM deep_scans s
            JOIN workflow_runs w ON w.id = s.run_id AND w.organization_id = s.organization_id
            WHERE s.organization_id = ${organizationId} AND s.repository_id = ${repositoryId}
              AND s.head_sha = ${headSha} AND w.status IN ('RECEIVED', 'QUEUED', 'RUNNING')
            ORDER BY s.created_at DESC LIMIT 1`.pipe(Effect.orDie)
          return Option.fromNullishOr(row)
        }),
        create: Effect.fn("DeepScansRepo.create")(function* (organizationId, launch) {
          const input = JSON.stringify({
            repository_id: launch.repositoryId,
            default_branch: launch.defaultBranch,
            head_sha: launch.headSha,
            egress_tier: "DEEP_SCAN"
          })
          const [row] = yield* sql<{ id: string }>`
            WITH run AS (
              INSERT INTO workflow_runs (organization_id, repository_id, workflow_type, status, head_sha, input_snapshot)
              VALUES (${organizationId}, ${launch.repositoryId}, 'deep_scan', 'QUEUED', ${launch.headSha},
                      ${input}::jsonb)
              RETURNING id
            )
            INSERT INTO deep_scans (organization_id, repository_id, run_id, default_branch, head_sha, requested_by)
            SELECT ${organizationId}, ${launch.repositoryId}, run.id, ${launch.defaultBranch}, ${launch.headSha},
                   ${launch.requestedBy}
            FROM run
            RETURNING id`.pipe(Effect.orDie)
          if (row === undefined) return yield* Effect.die(new Error("deep scan insert returned no row"))
          return { id: row.id }
        })
      })
    })
  )
}
