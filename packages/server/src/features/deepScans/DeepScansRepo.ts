/**
 * Deep scans (docs/interface.md: Resources "Deep scan"). A scan, its workflow run (type
 * `deep_scan`, status QUEUED, AGENT lane) and the run's job are written in one transaction, so none
 * exists without the others; the repository's scans share the session `deep-scan:{repository}`, so
 * they run one at a time, in order. Reads join the run for the status, timing, model and error, and
 * the repository for its name. Every query filters by organization.
 */
import { RunQueue } from "@bosun/actors/jobs/RunQueue"
import type { DeepScan } from "@bosun/domain"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { iso } from "../../platform/db/Timestamps.ts"

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
  readonly coverage_skipped: ReadonlyArray<{ readonly path: string; readonly reason: string }>
  readonly suppressed_count: number
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
  skipped: row.coverage_skipped,
  started_at: iso(row.started_at),
  status: row.status,
  summary: row.summary,
  suppressed_count: row.suppressed_count
})

export const DEEP_SCAN = "deep_scan"

/** What a deep scan's run needs to know about its scan. */
export interface DeepScanForRun {
  readonly id: string
  readonly repositoryId: string
  readonly defaultBranch: string
  readonly headSha: string
}

export interface DeepScanLaunch {
  readonly repositoryId: string
  readonly defaultBranch: string
  readonly headSha: string
  /** Null for a scan a schedule launched. */
  readonly requestedBy: string | null
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
    /** Writes the scan and its queued run (the scheduler picks it up); returns the scan's and the run's ids. */
    readonly create: (
      organizationId: string,
      launch: DeepScanLaunch
    ) => Effect.Effect<{ readonly id: string; readonly runId: string }>
    /** The scan whose run `runId` is. */
    readonly forRun: (organizationId: string, runId: string) => Effect.Effect<Option.Option<DeepScanForRun>>
  }
>()("bosun/server/persistence/DeepScansRepo") {
  static readonly layer = Layer.effect(
    DeepScansRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const runQueue = yield* RunQueue
      const select = sql.literal(`
        SELECT s.id, s.run_id, s.repository_id, r.name AS repository_name, r.owner AS repository_owner,
               s.head_sha, s.completion_status, s.finding_count, s.risk_level, s.accepted_count,
               s.pending_count, s.rejected_count, s.summary, s.coverage_skipped, s.suppressed_count, s.fix_work_item_id, w.status, w.model,
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
          return yield* sql
            .withTransaction(
              Effect.gen(function* () {
                const queued = yield* runQueue.enqueue({
                  organizationId,
                  repositoryId: launch.repositoryId,
                  workflowType: DEEP_SCAN,
                  lane: "AGENT",
                  sessionKey: `deep-scan:${launch.repositoryId}`,
                  headSha: launch.headSha,
                  inputSnapshot: {
                    repository_id: launch.repositoryId,
                    default_branch: launch.defaultBranch,
                    head_sha: launch.headSha,
                    egress_tier: "DEEP_SCAN"
                  }
                })
                const [row] = yield* sql<{ id: string }>`
                INSERT INTO deep_scans (organization_id, repository_id, run_id, default_branch, head_sha, requested_by)
                VALUES (${organizationId}, ${launch.repositoryId}, ${queued.runId}, ${launch.defaultBranch},
                        ${launch.headSha}, ${launch.requestedBy})
                RETURNING id`
                if (row === undefined) return yield* Effect.die(new Error("deep scan insert returned no row"))
                return { id: row.id, runId: queued.runId }
              })
            )
            .pipe(Effect.orDie)
        }),
        forRun: Effect.fn("DeepScansRepo.forRun")(function* (organizationId, runId) {
          const [row] = yield* sql<{ id: string; repository_id: string; default_branch: string; head_sha: string }>`
            SELECT id, repository_id, default_branch, head_sha FROM deep_scans
            WHERE organization_id = ${organizationId} AND run_id = ${runId}`.pipe(Effect.orDie)
          return Option.map(Option.fromNullishOr(row), (found) => ({
            id: found.id,
            repositoryId: found.repository_id,
            defaultBranch: found.default_branch,
            headSha: found.head_sha
          }))
        })
      })
    })
  )
}
