/**
 * Workflow runs and attempts written as fixtures, straight into their tables: in production only
 * the actors write them (the `RunQueue`, the Scheduler and the attempt's records); a test of what
 * is read back needs a run in a given state without a Scheduler that would pick it up.
 */
import type { WorkflowRun } from "@bosun/domain"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { WorkflowRunsRepo } from "../../src/features/runs/WorkflowRunsRepo.ts"

export interface RunFixture {
  readonly workflowType: string
  readonly repositoryId: string | null
  readonly headSha?: string
  readonly baseSha?: string
  readonly pullRequestNumber?: number
  readonly inputSnapshot?: Readonly<Record<string, unknown>>
}

/** A RECEIVED run with no job, as the repository reads it back. */
export const insertRun = (organizationId: string, run: RunFixture) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ id: string }>`
      INSERT INTO workflow_runs (organization_id, repository_id, workflow_type, head_sha, base_sha,
                                 pull_request_number, input_snapshot)
      VALUES (${organizationId}, ${run.repositoryId}, ${run.workflowType}, ${run.headSha ?? null},
              ${run.baseSha ?? null}, ${run.pullRequestNumber ?? null}, ${JSON.stringify(run.inputSnapshot ?? {})}::jsonb)
      RETURNING id`
    if (row === undefined) return yield* Effect.die(new Error("run insert returned no row"))
    const found = yield* (yield* WorkflowRunsRepo).find(organizationId, row.id)
    return Option.getOrThrow(found).run satisfies WorkflowRun
  }).pipe(Effect.orDie)

/** A started attempt `attempt` of the run (id `{run}:{attempt}`). */
export const insertAttempt = (
  runId: string,
  attempt: number,
  fields: { readonly workerId?: string; readonly sandboxProvider?: string } = {}
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`
      INSERT INTO workflow_attempts (id, run_id, attempt, worker_id, sandbox_provider, started_at)
      VALUES (${`${runId}:${attempt}`}, ${runId}, ${attempt}, ${fields.workerId ?? null},
              ${fields.sandboxProvider ?? null}, now())`
  }).pipe(Effect.orDie)
