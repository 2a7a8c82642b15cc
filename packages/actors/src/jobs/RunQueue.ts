/**
 * How work enters the cluster (docs/interface.md: What the service does 6, 9): the `RunQueue`
 * service is the only writer of `workflow_runs` and `jobs` outside this package. A webhook
 * handler, an API call or a cron enqueues a run and its job in one statement — inside the caller's
 * transaction when it has one — and then wakes the Scheduler; it never waits for an agent.
 * Everything after that (claim, attempts, retries, the cancellation itself) is the Scheduler's.
 */
import type { Lane } from "@bosun/domain"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

export interface NewRun {
  readonly organizationId: string
  readonly repositoryId: string | null
  readonly workflowType: string
  readonly lane: Lane
  /** Jobs of one session (chat thread, ticket, pull request) run one at a time, in order. */
  readonly sessionKey?: string | undefined
  /** Reviews of one pull request share a batch key: while queued, the newest supersedes the rest. */
  readonly batchKey?: string | undefined
  readonly headSha?: string | undefined
  readonly baseSha?: string | undefined
  readonly pullRequestNumber?: number | undefined
  readonly inputSnapshot?: Readonly<Record<string, unknown>> | undefined
  readonly maxAttempts?: number | undefined
  /** Not claimed before this (a review batch window). */
  readonly notBefore?: Date | undefined
}

export interface QueuedRun {
  readonly runId: string
  readonly jobId: string
}

export class RunQueue extends Context.Service<
  RunQueue,
  {
    /** Writes the run (QUEUED) and its job in one statement; run it inside the caller's transaction. */
    readonly enqueue: (run: NewRun) => Effect.Effect<QueuedRun>
    /**
     * Asks for a run to be cancelled: a queued job is dropped by the next Scheduler pass, a running
     * attempt stops its agent and releases its sandbox. True when the run was still going.
     */
    readonly requestCancel: (organizationId: string, runId: string) => Effect.Effect<boolean>
    /**
     * Asks every job of the session (e.g. a pull request's reviews) in `statuses` to stop, as
     * `requestCancel` does one; answers how many were still going. In the caller's transaction.
     */
    readonly requestSessionCancel: (
      organizationId: string,
      sessionKey: string,
      statuses: ReadonlyArray<"QUEUED" | "RUNNING">
    ) => Effect.Effect<number>
  }
>()("@bosun/actors/RunQueue") {
  /** Needs the SqlClient; a call made inside that client's transaction joins it. */
  static readonly layer = Layer.effect(
    RunQueue,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return {
        enqueue: Effect.fn("RunQueue.enqueue")(function* (run: NewRun) {
          const rows = yield* sql<{ run_id: string; job_id: string }>`
            WITH run AS (
              INSERT INTO workflow_runs (organization_id, repository_id, workflow_type, status, head_sha, base_sha,
                                         pull_request_number, input_snapshot)
              VALUES (${run.organizationId}, ${run.repositoryId}, ${run.workflowType}, 'QUEUED', ${run.headSha ?? null},
                      ${run.baseSha ?? null}, ${run.pullRequestNumber ?? null},
                      ${JSON.stringify(run.inputSnapshot ?? {})}::jsonb)
              RETURNING id, organization_id
            )
            INSERT INTO jobs (run_id, organization_id, lane, session_key, batch_key, head_sha, max_attempts, not_before)
            SELECT run.id, run.organization_id, ${run.lane}, ${run.sessionKey ?? null}, ${run.batchKey ?? null},
                   ${run.headSha ?? null}, ${run.maxAttempts ?? 3}, coalesce(${run.notBefore ?? null}::timestamptz, now())
            FROM run
            RETURNING run_id, id AS job_id`.pipe(Effect.orDie)
          const row = rows[0]
          if (row === undefined) return yield* Effect.die(new Error("RunQueue.enqueue: the insert returned no row"))
          return { runId: row.run_id, jobId: row.job_id } satisfies QueuedRun
        }),
        requestCancel: Effect.fn("RunQueue.requestCancel")(function* (organizationId: string, runId: string) {
          const rows = yield* sql<{ run_id: string }>`
            UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, now()), updated_at = now()
            WHERE organization_id = ${organizationId} AND run_id = ${runId} AND status IN ('QUEUED', 'RUNNING')
            RETURNING run_id`.pipe(Effect.orDie)
          return rows.length > 0
        }),
        requestSessionCancel: Effect.fn("RunQueue.requestSessionCancel")(function* (
          organizationId: string,
          sessionKey: string,
          statuses: ReadonlyArray<"QUEUED" | "RUNNING">
        ) {
          if (statuses.length === 0) return 0
          const rows = yield* sql<{ run_id: string }>`
            UPDATE jobs SET cancel_requested_at = now(), updated_at = now()
            WHERE organization_id = ${organizationId} AND session_key = ${sessionKey}
              AND status IN ${sql.in(statuses)} AND cancel_requested_at IS NULL
            RETURNING run_id`.pipe(Effect.orDie)
          return rows.length
        })
      }
    })
  )
}
