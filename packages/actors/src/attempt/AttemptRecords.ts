/**
 * The rows one attempt writes while it runs: its steps (`workflow_attempt_steps`, with
 * how many times each body executed), its heartbeat (the lease the Scheduler watches), the sealed
 * request's key, its sandbox, its runtime events (`workflow_events`), and how it ended. Every
 * write that could come from a zombie — a worker whose lease already expired — is fenced on the
 * attempt still being RUNNING, so a recovered attempt's late writes change nothing.
 */
import type { AttemptStep, RunEvent, RunState, WorkflowEvent } from "@bosun/domain"
import { Data, Effect, Option } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { storableEventData } from "../events/StorableEvent.ts"
import { recordFirstEvent } from "./AttemptMetrics.ts"
import type { AttemptRun } from "./AttemptPorts.ts"

export interface AttemptStatus {
  readonly run: AttemptRun
  /** The attempt row's status; anything but RUNNING means this attempt is over (or was recovered). */
  readonly status: "RUNNING" | "SUCCEEDED" | "FAILED" | "CANCELLED"
  readonly cancelRequested: boolean
  readonly requestKey: string | null
  readonly runtimeCursor: number
  readonly sandboxId: string | null
  /**
   * The run's last committed event is this attempt's `run.finished`: the tail is done, and a
   * worker that resumes the execute step must not wait on a tail that has nothing left to give.
   */
  readonly endCommitted: boolean
}

interface LoadRow {
  readonly organization_id: string
  readonly run_id: string
  readonly attempt: number
  readonly workflow_type: string
  readonly repository_id: string | null
  readonly head_sha: string | null
  readonly base_sha: string | null
  readonly pull_request_number: number | null
  readonly input_snapshot: Record<string, unknown>
  readonly status: AttemptStatus["status"]
  readonly cancel_requested: boolean
  readonly request_key: string | null
  readonly runtime_cursor: string
  readonly sandbox_id: string | null
  readonly end_committed: boolean
}

export const loadAttempt = Effect.fn("Attempt.load")(function* (
  organizationId: string,
  runId: string,
  attempt: number
) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<LoadRow>`
    SELECT r.organization_id, r.id AS run_id, a.attempt, r.workflow_type, r.repository_id, r.head_sha, r.base_sha,
           r.pull_request_number, r.input_snapshot, a.status, (j.cancel_requested_at IS NOT NULL) AS cancel_requested,
           a.request_key, a.runtime_cursor, a.sandbox_id,
           coalesce((SELECT e.type = 'run.finished' AND e.attempt = a.attempt FROM workflow_events e
                     WHERE e.run_id = r.id ORDER BY e.seq DESC LIMIT 1), false) AS end_committed
    FROM workflow_runs r
    JOIN workflow_attempts a ON a.run_id = r.id AND a.attempt = ${attempt}
    LEFT JOIN jobs j ON j.run_id = r.id
    WHERE r.organization_id = ${organizationId} AND r.id = ${runId}`.pipe(Effect.orDie)
  return Option.map(
    Option.fromNullishOr(rows[0]),
    (row): AttemptStatus => ({
      run: {
        organizationId: row.organization_id,
        runId: row.run_id,
        attempt: row.attempt,
        attemptId: `${row.run_id}:${row.attempt}`,
        workflowType: row.workflow_type,
        repositoryId: row.repository_id,
        headSha: row.head_sha,
        baseSha: row.base_sha,
        pullRequestNumber: row.pull_request_number,
        inputSnapshot: row.input_snapshot
      },
      status: row.status,
      cancelRequested: row.cancel_requested,
      requestKey: row.request_key,
      runtimeCursor: Number(row.runtime_cursor),
      sandboxId: row.sandbox_id,
      endCommitted: row.end_committed
    })
  )
})

/** A step's body begins: counted, so a re-run shows. */
export const stepStarted = Effect.fn("Attempt.stepStarted")(function* (attemptId: string, step: AttemptStep) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    INSERT INTO workflow_attempt_steps (attempt_id, step, status)
    VALUES (${attemptId}, ${step}, 'RUNNING')
    ON CONFLICT (attempt_id, step) DO UPDATE
    SET executions = workflow_attempt_steps.executions + 1, status = 'RUNNING', error = NULL, finished_at = NULL`.pipe(
    Effect.orDie
  )
})

export const stepFinished = Effect.fn("Attempt.stepFinished")(function* (
  attemptId: string,
  step: AttemptStep,
  error: string | null
) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    UPDATE workflow_attempt_steps
    SET status = ${error === null ? "SUCCEEDED" : "FAILED"}, error = ${error}, finished_at = now()
    WHERE attempt_id = ${attemptId} AND step = ${step}`.pipe(Effect.orDie)
})

/**
 * Where a failed attempt stands: whether the run gets another attempt after it (the Scheduler's
 * rule: retryable and attempts left), the step that failed (the last one recorded FAILED;
 * `execute` when the agent itself failed), and the model and provider the attempt used.
 * None once the attempt is no longer running (recovered by lease expiry, or already finished).
 */
export const failureContext = Effect.fn("Attempt.failureContext")(function* (run: AttemptRun, retryable: boolean) {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{
    readonly max_attempts: number
    readonly step: AttemptStep | null
    readonly model: string | null
    readonly provider: string | null
  }>`
    SELECT j.max_attempts, r.model, r.provider,
           (SELECT s.step FROM workflow_attempt_steps s
            WHERE s.attempt_id = a.id AND s.status = 'FAILED' ORDER BY s.finished_at DESC LIMIT 1) AS step
    FROM workflow_attempts a
    JOIN workflow_runs r ON r.id = a.run_id
    JOIN jobs j ON j.run_id = a.run_id
    WHERE r.organization_id = ${run.organizationId} AND a.id = ${run.attemptId} AND a.status = 'RUNNING'`.pipe(
    Effect.orDie
  )
  return Option.map(Option.fromNullishOr(row), (found) => ({
    final: !retryable || run.attempt >= found.max_attempts,
    maxAttempts: found.max_attempts,
    step: found.step ?? ("execute" as const),
    model: found.model,
    provider: found.provider
  }))
})

/** Renews the attempt's lease; false when the attempt is no longer running (recovered or ended). */
export const heartbeat = Effect.fn("Attempt.heartbeat")(function* (attemptId: string, phase?: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ run_id: string }>`
    UPDATE workflow_attempts SET heartbeat_at = now()
    WHERE id = ${attemptId} AND status = 'RUNNING'
    RETURNING run_id`.pipe(Effect.orDie)
  const runId = rows[0]?.run_id
  if (runId !== undefined && phase !== undefined) {
    yield* sql`UPDATE workflow_runs SET current_phase = ${phase}, updated_at = now()
               WHERE id = ${runId} AND current_phase IS DISTINCT FROM ${phase}`.pipe(Effect.orDie)
  }
  return runId !== undefined
})

export const recordPrepared = Effect.fn("Attempt.recordPrepared")(function* (
  run: AttemptRun,
  prepared: { readonly requestKey: string; readonly model: string | null; readonly provider: string | null }
) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE workflow_attempts SET request_key = ${prepared.requestKey}
             WHERE id = ${run.attemptId} AND status = 'RUNNING'`.pipe(Effect.orDie)
  yield* sql`UPDATE workflow_runs SET model = ${prepared.model}, provider = ${prepared.provider},
                                      current_phase = 'prepared', updated_at = now()
             WHERE organization_id = ${run.organizationId} AND id = ${run.runId}`.pipe(Effect.orDie)
})

export const recordSandbox = Effect.fn("Attempt.recordSandbox")(function* (
  run: AttemptRun,
  sandbox: { readonly provider: string; readonly id: string }
) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE workflow_attempts SET sandbox_provider = ${sandbox.provider}, sandbox_id = ${sandbox.id}
             WHERE id = ${run.attemptId}`.pipe(Effect.orDie)
  yield* sql`UPDATE workflow_runs SET sandbox_provider = ${sandbox.provider}, sandbox_id = ${sandbox.id},
                                      current_phase = 'sandbox-acquired', updated_at = now()
             WHERE organization_id = ${run.organizationId} AND id = ${run.runId}`.pipe(Effect.orDie)
})

export const cancelRequested = Effect.fn("Attempt.cancelRequested")(function* (run: AttemptRun) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ cancelled: boolean }>`
    SELECT cancel_requested_at IS NOT NULL AS cancelled FROM jobs
    WHERE organization_id = ${run.organizationId} AND run_id = ${run.runId}`.pipe(Effect.orDie)
  return rows[0]?.cancelled === true
})

/** The database refused a flush of runtime events; `message` is the database's own. */
export class EventFlushError extends Data.TaggedError("EventFlushError")<{ readonly message: string }> {}

/**
 * Appends runtime events to the run's `workflow_events` in one transaction, renumbered to continue
 * the run's sequence, and moves the attempt's cursor to the last runtime seq written. Fenced: when
 * the attempt is no longer RUNNING or its cursor is not where this writer left it (another writer
 * got there first), nothing is written and `undefined` comes back. Answers the committed events.
 */
export const flushEvents = Effect.fn("Attempt.flushEvents")(function* (
  run: AttemptRun,
  fromCursor: number,
  events: ReadonlyArray<RunEvent>
) {
  const sql = yield* SqlClient.SqlClient
  const last = events[events.length - 1]
  if (last === undefined) return [] as ReadonlyArray<WorkflowEvent>
  // Recorded once the transaction committed: a rolled-back flush wrote no first event.
  let firstEventAfter: { readonly workflow_type: string; readonly waited_s: number } | undefined
  const written = yield* sql
    .withTransaction(
      Effect.gen(function* () {
        const moved = yield* sql<{ id: string }>`
          UPDATE workflow_attempts SET runtime_cursor = ${last.seq}, heartbeat_at = now()
          WHERE id = ${run.attemptId} AND status = 'RUNNING' AND runtime_cursor = ${fromCursor}
          RETURNING id`
        if (moved.length === 0) return undefined
        // One attempt writes a run's events at a time (the run's job is RUNNING with this attempt),
        // and the row lock on the attempt serializes its own writers.
        const [top] = yield* sql<{ seq: string }>`
          SELECT coalesce(max(seq), 0) AS seq FROM workflow_events WHERE run_id = ${run.runId}`
        const base = Number(top?.seq ?? 0)
        // Agent output is untrusted: what jsonb refuses is escaped and an event is bounded, so no
        // event can fail its batch (the full text stays in the runtime's log).
        const stored = events.map((event) => storableEventData(event.data ?? null))
        const rows = events.map((event, index) => ({
          run_id: run.runId,
          seq: base + index + 1,
          organization_id: run.organizationId,
          attempt: run.attempt,
          type: event.type,
          data: JSON.stringify(stored[index] ?? null),
          created_at: event.at
        }))
        const [first, ...rest] = rows
        if (first === undefined) return [] as ReadonlyArray<WorkflowEvent>
        yield* sql`INSERT INTO workflow_events ${sql.insert([first, ...rest])}`
        if (base === 0) {
          // The run's first events: how long after the run was created they were written.
          const [created] = yield* sql<{ workflow_type: string; waited_s: number }>`
            SELECT workflow_type, extract(epoch FROM now() - created_at)::float8 AS waited_s
            FROM workflow_runs WHERE organization_id = ${run.organizationId} AND id = ${run.runId}`
          if (created !== undefined) firstEventAfter = created
        }
        return rows.map(
          (row, index): WorkflowEvent => ({
            seq: row.seq,
            attempt: row.attempt,
            type: row.type,
            data: stored[index] ?? null,
            created_at: row.created_at
          })
        )
      })
    )
    .pipe(Effect.mapError((error) => new EventFlushError({ message: databaseMessage(error) })))
  if (firstEventAfter !== undefined) yield* recordFirstEvent(firstEventAfter.workflow_type, firstEventAfter.waited_s)
  return written
})

/** The database's own words for a failed statement: the driver's error under the SqlError's reason. */
const databaseMessage = (error: SqlError.SqlError): string => {
  const cause = error.reason.cause
  if (cause instanceof Error && cause.message !== "") {
    const code = "code" in cause && typeof cause.code === "string" ? ` (SQLSTATE ${cause.code})` : ""
    return `${cause.message}${code}`
  }
  return error.message
}

export interface AttemptOutcome {
  readonly status: "SUCCEEDED" | "FAILED" | "CANCELLED"
  readonly retryable: boolean
  readonly exitReason: string | null
  readonly error: { readonly code: string; readonly message: string } | null
  readonly usage: RunState["usage"] | null
}

/** The attempt ends; false when it had already ended (a recovered attempt's late finish changes nothing). */
export const finishAttempt = Effect.fn("Attempt.finish")(function* (run: AttemptRun, outcome: AttemptOutcome) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql
    .withTransaction(
      Effect.gen(function* () {
        const rows = yield* sql<{ id: string }>`
          UPDATE workflow_attempts
          SET status = ${outcome.status}, retryable = ${outcome.retryable}, exit_reason = ${outcome.exitReason},
              error_code = ${outcome.error?.code ?? null}, error_message = ${outcome.error?.message ?? null},
              usage = ${JSON.stringify(outcome.usage ?? {})}::jsonb, finished_at = now()
          WHERE id = ${run.attemptId} AND status = 'RUNNING'
          RETURNING id`
        if (rows.length === 0) return false
        if (outcome.usage !== null) {
          // The run's usage is the sum over its attempts.
          yield* sql`
            UPDATE workflow_runs r SET usage = (
              SELECT jsonb_build_object(
                'input_tokens', coalesce(sum((a.usage->>'input_tokens')::bigint), 0),
                'output_tokens', coalesce(sum((a.usage->>'output_tokens')::bigint), 0),
                'cost_usd', sum((a.usage->>'cost_usd')::numeric),
                'duration_ms', coalesce(sum((a.usage->>'duration_ms')::bigint), 0),
                'attempts', count(*))
              FROM workflow_attempts a WHERE a.run_id = r.id AND a.finished_at IS NOT NULL),
              current_phase = 'finished', updated_at = now()
            WHERE r.organization_id = ${run.organizationId} AND r.id = ${run.runId}`
        }
        return true
      })
    )
    .pipe(Effect.orDie)
})
