/**
 * Jobs, the Scheduler's record of a workflow run, and the events a run streams
 * (docs/interface.md: What the service does 6, 8, 9; Events 1-2; States and transitions 3). A
 * webhook handler, an API call or a cron writes a run (QUEUED, or RECEIVED while an inbox consumer
 * still decides) and its job in one transaction; from then on only the Scheduler changes the job's
 * status, and the run's follows:
 *
 * | job status | next | when | run status |
 * | --- | --- | --- | --- |
 * | QUEUED | RUNNING | claimed: its lane has room, it heads its session, its batch window and retry backoff are over | RUNNING |
 * | QUEUED | SUPERSEDED | a newer review of the same pull request (another head SHA) was queued | CANCELLED (`superseded`) |
 * | QUEUED | CANCELLED | cancellation requested | CANCELLED |
 * | RUNNING | SUCCEEDED | the attempt succeeded | SUCCEEDED |
 * | RUNNING | QUEUED | the attempt failed retryably (or its lease expired) and attempts are left; backoff in `not_before` | QUEUED |
 * | RUNNING | FAILED | the attempt failed for good, or the last attempt failed | FAILED |
 * | RUNNING | CANCELLED | cancellation requested; the attempt stopped its agent and released its sandbox | CANCELLED |
 *
 * SUCCEEDED, FAILED, CANCELLED and SUPERSEDED are final. A run's RECEIVED status precedes its job.
 */
import { Schema } from "effect"

export const JobStatus = Schema.Literals(["QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "SUPERSEDED"])
export type JobStatus = typeof JobStatus.Type

/** Lanes have their own concurrency limits, so reviews are not stuck behind long agent work. */
export const Lane = Schema.Literals(["AGENT", "REVIEW"])
export type Lane = typeof Lane.Type

/** The steps of one attempt, in order (docs/interface.md: States and transitions 3). */
export const ATTEMPT_STEPS = [
  "prepare",
  "acquire-sandbox",
  "execute",
  "publish",
  "finish-attempt",
  "release-sandbox",
  "notify-scheduler"
] as const
export type AttemptStep = (typeof ATTEMPT_STEPS)[number]

/**
 * One event of a run's live stream and of `workflow_events`: the runtime's event renumbered per
 * run (`seq` continues across attempts, from 1, without gaps), with the attempt it came from; the
 * run's last event is `run.ended` (`RunEnded`).
 */
export const WorkflowEvent = Schema.Struct({
  seq: Schema.Int,
  attempt: Schema.Int,
  type: Schema.String,
  data: Schema.Unknown,
  created_at: Schema.String
})
export type WorkflowEvent = typeof WorkflowEvent.Type

/**
 * The type of a run's last event, written by the Scheduler in the transaction that ends the run
 * (each attempt's own last event is the runtime's `run.finished`, which a retry may follow): a
 * live stream ends after it.
 */
export const RUN_ENDED = "run.ended"

/** The data of `run.ended`: how the run ended. */
export const RunEnded = Schema.Struct({
  status: Schema.Literals(["SUCCEEDED", "FAILED", "CANCELLED"]),
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, message: Schema.String })),
  finished_at: Schema.String
})
export type RunEnded = typeof RunEnded.Type
