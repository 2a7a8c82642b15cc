/**
 * A deep scan (docs/interface.md: Resources "Deep scan"; Organization endpoints
 * `GET`/`POST .../deep-scans`): an agent's audit of a whole repository at one commit, the default
 * branch's head when it was launched. Its status is its workflow run's; the counts, risk level and
 * summary are written as the scan's findings arrive and are decided.
 *
 * - `completion_status`: COMPLETE when every part of the repository was covered, PARTIAL when
 *   something was skipped; null until the scan has finished.
 * - `risk_level`: from the worst accepted-or-pending finding; NONE when there is none; null
 *   until the scan has finished.
 */
import { Schema } from "effect"
import { PathId } from "./Ids.ts"
import { WorkflowRunStatus } from "./WorkflowRun.ts"

export const DeepScanCompletion = Schema.Literals(["COMPLETE", "PARTIAL"])
export const RiskLevel = Schema.Literals(["NONE", "LOW", "MEDIUM", "HIGH", "CRITICAL"])

const Text = Schema.NullOr(Schema.String)

export const DeepScan = Schema.Struct({
  completion_status: Schema.NullOr(DeepScanCompletion),
  created_at: Schema.String,
  decision_counts: Schema.Struct({ accepted: Schema.Int, pending: Schema.Int, rejected: Schema.Int }),
  error_code: Text,
  error_message: Text,
  finding_count: Schema.Int,
  finished_at: Text,
  fix_work_item_id: Text,
  head_sha: Schema.String,
  id: Schema.String,
  model: Text,
  provider: Text,
  repository: Schema.Struct({ id: Schema.String, name: Schema.String, owner: Schema.String }),
  risk_level: Schema.NullOr(RiskLevel),
  run_id: Schema.String,
  /** What the scan did not cover (why it is PARTIAL), with why. */
  skipped: Schema.Array(Schema.Struct({ path: Schema.String, reason: Schema.String })),
  started_at: Text,
  status: WorkflowRunStatus,
  summary: Text,
  /** Findings the repository's suppressions (earlier rejections) held back. */
  suppressed_count: Schema.Int
})
export type DeepScan = typeof DeepScan.Type

/** `POST .../deep-scans`. */
export const DeepScanLaunch = Schema.Struct({ repository_id: PathId })

export const DEFAULT_DEEP_SCAN_PAGE_SIZE = 20

/**
 * A repository's recurring deep scan: a five-field cron expression (minute hour
 * day-of-month month day-of-week, UTC) the cluster's cron runs on one runner; each occurrence
 * launches one scan at the default branch's head, as `POST .../deep-scans` does.
 */
export const DeepScanScheduleInput = Schema.Struct({
  cron: Schema.String.check(Schema.isMinLength(9), Schema.isMaxLength(200))
})

export const DeepScanSchedule = Schema.Struct({
  repository_id: Schema.String,
  cron: Schema.String,
  next_run_at: Schema.String,
  last_run_at: Schema.NullOr(Schema.String),
  last_deep_scan_id: Schema.NullOr(Schema.String),
  last_run_id: Schema.NullOr(Schema.String),
  last_error: Schema.NullOr(Schema.String),
  updated_at: Schema.String
})
export type DeepScanSchedule = typeof DeepScanSchedule.Type
