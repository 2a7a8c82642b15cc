/**
 * One Scheduler pass (docs/interface.md: Coordinators, Scheduler): every job-status change Bosun
 * makes, in one transaction under an advisory lock, so even two Scheduler instances overlapping
 * during a failover cannot claim a job twice. The transitions are the table in
 * `packages/domain/src/Jobs.ts`; in order:
 *
 * 1. lease recovery: a RUNNING attempt whose heartbeat is older than the lease fails as
 *    retryable (`lease_expired`); its workflow is interrupted after the commit;
 * 2. settle: a RUNNING job whose current attempt has ended becomes SUCCEEDED, CANCELLED, FAILED,
 *    or QUEUED again with an exponential backoff while attempts are left; a run that ended (here
 *    or in 3) gets its last event, `run.ended`;
 * 3. queued cancellations, and the review-batch gate: of the queued reviews of one pull request
 *    only the newest stays, the rest are SUPERSEDED;
 * 4. claim: per lane, as many of the oldest due jobs as the lane has room for, skipping a job
 *    whose session has a running job or an older queued one (per-session FIFO); each claim
 *    writes the attempt `runId:attempt`.
 * The pass reports what to start (claimed attempts whose workflow was not yet handed to the
 * engine — also ones a crash left unstarted), what to interrupt, and when it is next due.
 */
import { type Lane, RUN_ENDED, type WorkflowEvent } from "@bosun/domain"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Key of the transaction-scoped advisory lock every pass holds ("bosun" 02). */
export const SCHEDULER_LOCK_KEY = 0x626f73756e02n

export interface SchedulerSettings {
  /** Attempts running at once per lane. */
  readonly lanes: Readonly<Record<Lane, number>>
  /** An attempt without a heartbeat for this long is failed as retryable. */
  readonly lease: Duration.Duration
  /** The first retry's delay; it doubles with each attempt. */
  readonly retryBackoff: Duration.Duration
}

export interface AttemptRef {
  readonly organizationId: string
  readonly runId: string
  readonly attempt: number
}

export interface PassReport {
  readonly claimed: number
  readonly settled: number
  /** The runs this pass ended, each with its `run.ended` event as committed (to publish to RunEvents). */
  readonly ended: ReadonlyArray<EndedRun>
  readonly toStart: ReadonlyArray<AttemptRef>
  readonly expired: ReadonlyArray<AttemptRef>
  /** How long each claimed job had been due (created, or out of its retry backoff), by lane. */
  readonly queueWaits: ReadonlyArray<{ readonly lane: string; readonly seconds: number }>
  /** When a queued job becomes due or a running attempt's lease runs out, if ever. */
  readonly nextDueAt: Date | null
}

export interface EndedRun {
  readonly organizationId: string
  readonly runId: string
  readonly event: WorkflowEvent
}

interface EndedRow {
  readonly run_id: string
  readonly seq: string
  readonly organization_id: string
  readonly attempt: number
  readonly type: string
  readonly data: unknown
  readonly created_at: Date
}

interface RefRow {
  readonly organization_id: string
  readonly run_id: string
  readonly attempt: number
}

const toRef = (row: RefRow): AttemptRef => ({
  organizationId: row.organization_id,
  runId: row.run_id,
  attempt: row.attempt
})

type Sql = SqlClient.SqlClient

/** 1. A RUNNING attempt silent for longer than its lease fails as retryable. */
const expireLeases = (sql: Sql, leaseMs: number) =>
  sql<RefRow>`
    UPDATE workflow_attempts a
    SET status = 'FAILED', exit_reason = 'lease_expired', retryable = true, error_code = 'lease_expired',
        error_message = 'the attempt''s worker stopped reporting progress for longer than its lease',
        finished_at = now()
    FROM jobs j
    WHERE j.run_id = a.run_id AND j.attempt = a.attempt AND j.status = 'RUNNING' AND a.status = 'RUNNING'
      AND coalesce(a.heartbeat_at, a.started_at) < now() - make_interval(secs => ${leaseMs / 1000})
    RETURNING j.organization_id, a.run_id, a.attempt`

/** 2. Jobs whose current attempt ended move on, and their runs with them. */
const settleEnded = (sql: Sql, backoffMs: number) =>
  sql<{ run_id: string }>`
    WITH ended AS (
      SELECT j.id, j.run_id, j.attempt, j.max_attempts, j.cancel_requested_at, a.status AS attempt_status,
             a.retryable, a.error_code, a.error_message
      FROM jobs j
      JOIN workflow_attempts a ON a.run_id = j.run_id AND a.attempt = j.attempt
      WHERE j.status = 'RUNNING' AND a.status <> 'RUNNING'
      FOR UPDATE OF j
    ), next AS (
      SELECT ended.*,
             CASE
               WHEN attempt_status = 'SUCCEEDED' THEN 'SUCCEEDED'
               WHEN attempt_status = 'CANCELLED' OR cancel_requested_at IS NOT NULL THEN 'CANCELLED'
               WHEN retryable AND attempt < max_attempts THEN 'QUEUED'
               ELSE 'FAILED'
             END AS next_status
      FROM ended
    ), jobs_moved AS (
      UPDATE jobs j
      SET status = next.next_status,
          not_before = CASE WHEN next.next_status = 'QUEUED'
                            THEN now() + make_interval(secs => ${backoffMs / 1000} * power(2, next.attempt - 1))
                            ELSE j.not_before END,
          workflow_started = false,
          updated_at = now()
      FROM next
      WHERE j.id = next.id
      RETURNING j.run_id
    )
    UPDATE workflow_runs r
    SET status = next.next_status,
        finished_at = CASE WHEN next.next_status = 'QUEUED' THEN NULL ELSE now() END,
        error_code = CASE WHEN next.next_status = 'FAILED' THEN next.error_code
                          WHEN next.next_status = 'CANCELLED' THEN 'cancelled' ELSE NULL END,
        error_message = CASE WHEN next.next_status = 'FAILED' THEN next.error_message
                             WHEN next.next_status = 'CANCELLED' THEN 'the run was cancelled' ELSE NULL END,
        current_phase = CASE WHEN next.next_status = 'QUEUED' THEN 'retry-wait' ELSE r.current_phase END,
        updated_at = now()
    FROM next
    WHERE r.id = next.run_id AND next.run_id IN (SELECT run_id FROM jobs_moved)
    RETURNING r.id AS run_id`

/** 3. Queued jobs whose cancellation was asked for never start. */
const dropCancelled = (sql: Sql) =>
  sql<{ run_id: string }>`
    WITH dropped AS (
      UPDATE jobs SET status = 'CANCELLED', updated_at = now()
      WHERE status = 'QUEUED' AND cancel_requested_at IS NOT NULL
      RETURNING run_id
    )
    UPDATE workflow_runs SET status = 'CANCELLED', finished_at = now(), error_code = 'cancelled',
                             error_message = 'the run was cancelled before it started', updated_at = now()
    WHERE id IN (SELECT run_id FROM dropped)
    RETURNING id AS run_id`

/** 3. Of the queued reviews of one pull request only the newest stays. */
const supersedeBatched = (sql: Sql) =>
  sql<{ run_id: string }>`
    WITH superseded AS (
      UPDATE jobs j SET status = 'SUPERSEDED', updated_at = now()
      WHERE j.status = 'QUEUED' AND j.batch_key IS NOT NULL
        AND EXISTS (
          SELECT 1 FROM jobs n
          WHERE n.organization_id = j.organization_id AND n.batch_key = j.batch_key AND n.status = 'QUEUED'
            AND (n.created_at, n.id) > (j.created_at, j.id))
      RETURNING run_id
    )
    UPDATE workflow_runs SET status = 'CANCELLED', finished_at = now(), error_code = 'superseded',
                             error_message = 'a newer review of this pull request replaced it', updated_at = now()
    WHERE id IN (SELECT run_id FROM superseded)
    RETURNING id AS run_id`

/**
 * Every run that ended in this pass gets its last event, `run.ended`, in the same transaction: a
 * live stream ends after it. No attempt writes the run's events any more (its job is settled), so
 * the next sequence is the run's alone.
 */
const recordRunsEnded = (sql: Sql, endedRuns: ReadonlyArray<string>) =>
  endedRuns.length === 0
    ? Effect.succeed<ReadonlyArray<EndedRow>>([])
    : sql<EndedRow>`
    INSERT INTO workflow_events (run_id, seq, organization_id, attempt, type, data, created_at)
    SELECT r.id,
           coalesce((SELECT max(e.seq) FROM workflow_events e WHERE e.run_id = r.id), 0) + 1,
           r.organization_id, greatest(j.attempt, 1), ${RUN_ENDED},
           jsonb_build_object(
             'status', r.status,
             'error', CASE WHEN r.error_code IS NULL THEN NULL
                           ELSE jsonb_build_object('code', r.error_code, 'message', coalesce(r.error_message, '')) END,
             'finished_at', to_char(r.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
           now()
    FROM workflow_runs r JOIN jobs j ON j.run_id = r.id
    WHERE r.id IN ${sql.in(endedRuns)} AND r.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
    RETURNING run_id, seq, organization_id, attempt, type, data, created_at`

/** 4. Per lane, as many of the oldest due jobs as the lane has room for, each with its new attempt. */
const claimDue = (sql: Sql, lanes: SchedulerSettings["lanes"]) =>
  sql<RefRow & { readonly lane: string; readonly queue_wait_s: number }>`
    WITH running AS (
      SELECT lane, count(*)::int AS n FROM jobs WHERE status = 'RUNNING' GROUP BY lane
    ), candidates AS (
      SELECT j.id, j.lane,
             row_number() OVER (PARTITION BY j.lane ORDER BY j.created_at, j.id) AS rank
      FROM jobs j
      WHERE j.status = 'QUEUED' AND j.not_before <= now() AND j.cancel_requested_at IS NULL
        AND (j.session_key IS NULL OR NOT EXISTS (
          SELECT 1 FROM jobs s
          WHERE s.organization_id = j.organization_id AND s.session_key = j.session_key
            AND (s.status = 'RUNNING' OR (s.status = 'QUEUED' AND (s.created_at, s.id) < (j.created_at, j.id)))))
    ), chosen AS (
      SELECT c.id FROM candidates c LEFT JOIN running r ON r.lane = c.lane
      WHERE c.rank <= (CASE c.lane WHEN 'AGENT' THEN ${lanes.AGENT}::int
                                    ELSE ${lanes.REVIEW}::int END) - coalesce(r.n, 0)
    ), claimed AS (
      UPDATE jobs j SET status = 'RUNNING', attempt = j.attempt + 1, workflow_started = false, updated_at = now()
      FROM chosen WHERE j.id = chosen.id
      RETURNING j.organization_id, j.run_id, j.attempt, j.lane,
                extract(epoch FROM now() - greatest(j.created_at, j.not_before))::float8 AS queue_wait_s
    ), attempts AS (
      INSERT INTO workflow_attempts (id, run_id, attempt, status, started_at, heartbeat_at)
      SELECT run_id || ':' || attempt, run_id, attempt, 'RUNNING', now(), now() FROM claimed
      ON CONFLICT (id) DO NOTHING
    ), runs AS (
      UPDATE workflow_runs r SET status = 'RUNNING', started_at = coalesce(r.started_at, now()),
                                 finished_at = NULL, current_phase = 'claimed', updated_at = now()
      FROM claimed WHERE r.id = claimed.run_id
    )
    SELECT organization_id, run_id, attempt, lane, queue_wait_s FROM claimed`

/** Claimed attempts whose workflow was not handed to the engine yet. */
const unstarted = (sql: Sql) =>
  sql<RefRow>`
    SELECT organization_id, run_id, attempt FROM jobs
    WHERE status = 'RUNNING' AND NOT workflow_started
    ORDER BY updated_at, id`

const nextDue = (sql: Sql, leaseMs: number) =>
  sql<{ next_due_at: Date | null }>`
    SELECT least(
      (SELECT min(not_before) FROM jobs WHERE status = 'QUEUED' AND not_before > now()),
      (SELECT min(coalesce(a.heartbeat_at, a.started_at)) + make_interval(secs => ${leaseMs / 1000})
       FROM workflow_attempts a WHERE a.status = 'RUNNING')
    ) AS next_due_at`

const endedRunOf = (row: EndedRow): EndedRun => ({
  organizationId: row.organization_id,
  runId: row.run_id,
  event: {
    seq: Number(row.seq),
    attempt: row.attempt,
    type: row.type,
    data: row.data,
    created_at: row.created_at.toISOString()
  }
})

export const runPass = Effect.fn("Scheduler.pass")(function* (settings: SchedulerSettings) {
  const sql = yield* SqlClient.SqlClient
  const leaseMs = Duration.toMillis(settings.lease)
  const backoffMs = Duration.toMillis(settings.retryBackoff)
  return yield* sql
    .withTransaction(
      Effect.gen(function* () {
        yield* sql`SELECT pg_advisory_xact_lock(${SCHEDULER_LOCK_KEY})`

        const expired = yield* expireLeases(sql, leaseMs)
        const settled = yield* settleEnded(sql, backoffMs)
        const dropped = yield* dropCancelled(sql)
        const superseded = yield* supersedeBatched(sql)
        const ended = yield* recordRunsEnded(
          sql,
          [...settled, ...dropped, ...superseded].map((row) => row.run_id)
        )
        const claimed = yield* claimDue(sql, settings.lanes)
        const toStart = yield* unstarted(sql)
        const [due] = yield* nextDue(sql, leaseMs)

        return {
          claimed: claimed.length,
          queueWaits: claimed.map((row) => ({ lane: row.lane, seconds: Math.max(0, row.queue_wait_s) })),
          settled: settled.length,
          ended: ended.map(endedRunOf),
          toStart: toStart.map(toRef),
          expired: expired.map(toRef),
          nextDueAt: due?.next_due_at ?? null
        } satisfies PassReport
      })
    )
    .pipe(Effect.orDie)
})

/** Records that a claimed attempt's workflow was handed to the engine (not a status change). */
export const markStarted = Effect.fn("Scheduler.markStarted")(function* (ref: AttemptRef) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    UPDATE jobs SET workflow_started = true
    WHERE organization_id = ${ref.organizationId} AND run_id = ${ref.runId} AND attempt = ${ref.attempt}
      AND status = 'RUNNING'`.pipe(Effect.orDie)
})
