/**
 * Workflow runs and attempts (docs/interface.md: Resources "Workflow run", "Workflow attempt").
 * Reads only (one run with its attempts, or the list newest first), filtered by organization: the
 * actors write runs and attempts (`RunQueue`, the Scheduler, the attempt's records).
 */
import type { WorkflowAttempt, WorkflowRun } from "@bosun/domain"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { iso } from "../../platform/db/Timestamps.ts"
import { RunCounts } from "../../platform/observability/Metrics.ts"

type Dated<T, K extends keyof T> = Omit<T, K> & { readonly [P in K]: Date | null }

export class WorkflowRunsRepo extends Context.Service<
  WorkflowRunsRepo,
  {
    /** Newest first (created_at, then id, descending); each filter given narrows the list. */
    readonly list: (
      organizationId: string,
      options: {
        readonly repositoryId?: string | undefined
        readonly pullRequestNumber?: number | undefined
        readonly limit: number
      }
    ) => Effect.Effect<ReadonlyArray<WorkflowRun>>
    readonly find: (
      organizationId: string,
      runId: string
    ) => Effect.Effect<Option.Option<{ readonly run: WorkflowRun; readonly attempts: ReadonlyArray<WorkflowAttempt> }>>
    /**
     * Runs of every organization by workflow type and status, for `/metrics` only: an
     * instance-wide count that names no organization, run, or anything an organization wrote.
     */
    readonly countByStatus: () => Effect.Effect<
      ReadonlyArray<{ readonly workflowType: string; readonly status: string; readonly count: number }>
    >
  }
>()("bosun/server/persistence/WorkflowRunsRepo") {
  static readonly layer = Layer.effect(
    WorkflowRunsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const runColumns = sql.literal(
        `id, organization_id, repository_id, workflow_type, status, current_phase, base_sha, head_sha,
         pull_request_number, model, provider, sandbox_provider, sandbox_id, input_snapshot, usage, error_code,
         error_message, created_at, started_at, finished_at, updated_at`
      )
      const attemptColumns = sql.literal(
        "id, attempt, worker_id, sandbox_provider, sandbox_id, exit_reason, retryable, started_at, finished_at"
      )
      type RunRow = Dated<WorkflowRun, "created_at" | "started_at" | "finished_at" | "updated_at">
      type AttemptRow = Dated<WorkflowAttempt, "started_at" | "finished_at">
      const toRun = (row: RunRow): WorkflowRun => ({
        ...row,
        created_at: iso(row.created_at) ?? "",
        updated_at: iso(row.updated_at) ?? "",
        started_at: iso(row.started_at),
        finished_at: iso(row.finished_at)
      })
      const toAttempt = (row: AttemptRow): WorkflowAttempt => ({
        ...row,
        started_at: iso(row.started_at),
        finished_at: iso(row.finished_at)
      })

      return WorkflowRunsRepo.of({
        countByStatus: Effect.fn("WorkflowRunsRepo.countByStatus")(function* () {
          const rows = yield* sql<{ workflow_type: string; status: string; n: number }>`
            SELECT workflow_type, status, count(*)::int AS n FROM workflow_runs GROUP BY workflow_type, status`.pipe(
            Effect.orDie
          )
          return rows.map((row) => ({ workflowType: row.workflow_type, status: row.status, count: row.n }))
        }),
        list: Effect.fn("WorkflowRunsRepo.list")(function* (organizationId, options) {
          const rows = yield* sql<RunRow>`
            SELECT ${runColumns} FROM workflow_runs
            WHERE organization_id = ${organizationId}
              ${options.repositoryId === undefined ? sql`` : sql`AND repository_id = ${options.repositoryId}`}
              ${
                options.pullRequestNumber === undefined
                  ? sql``
                  : sql`AND pull_request_number = ${options.pullRequestNumber}`
              }
            ORDER BY created_at DESC, id DESC
            LIMIT ${options.limit}`.pipe(Effect.orDie)
          return rows.map(toRun)
        }),
        find: Effect.fn("WorkflowRunsRepo.find")(function* (organizationId: string, runId: string) {
          const [run] = yield* sql<RunRow>`
            SELECT ${runColumns} FROM workflow_runs WHERE organization_id = ${organizationId} AND id = ${runId}`.pipe(
            Effect.orDie
          )
          if (run === undefined) return Option.none()
          const attempts = yield* sql<AttemptRow>`
            SELECT ${attemptColumns} FROM workflow_attempts WHERE run_id = ${runId} ORDER BY attempt`.pipe(Effect.orDie)
          return Option.some({ run: toRun(run), attempts: attempts.map(toAttempt) })
        })
      })
    })
  )
}

/** The runs gauge's source (`platform/observability/Metrics.ts`), read from this repository. */
export const RunCountsLive = Layer.effect(
  RunCounts,
  Effect.map(WorkflowRunsRepo, (runs) => RunCounts.of({ byStatus: runs.countByStatus() }))
)
