/**
 * Workflow runs and their attempts (docs/interface.md: Resources "Workflow run",
 * "Workflow attempt"; Run lifecycle). An attempt's id is the `RunAttemptWorkflow` instance id,
 * `runId:attempt`.
 */
import { Schema } from "effect"

export const WorkflowRunStatus = Schema.Literals(["RECEIVED", "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"])

const Text = Schema.NullOr(Schema.String)

export const WorkflowRun = Schema.Struct({
  base_sha: Text,
  created_at: Schema.String,
  current_phase: Text,
  error_code: Text,
  error_message: Text,
  finished_at: Text,
  head_sha: Text,
  id: Schema.String,
  input_snapshot: Schema.Record(Schema.String, Schema.Unknown),
  model: Text,
  organization_id: Schema.String,
  provider: Text,
  pull_request_number: Schema.NullOr(Schema.Int),
  repository_id: Text,
  sandbox_id: Text,
  sandbox_provider: Text,
  started_at: Text,
  status: WorkflowRunStatus,
  updated_at: Schema.String,
  usage: Schema.Record(Schema.String, Schema.Unknown),
  workflow_type: Schema.String
})
export type WorkflowRun = typeof WorkflowRun.Type

export const WorkflowAttempt = Schema.Struct({
  attempt: Schema.Int,
  exit_reason: Text,
  finished_at: Text,
  id: Schema.String,
  retryable: Schema.Boolean,
  sandbox_id: Text,
  sandbox_provider: Text,
  started_at: Text,
  worker_id: Text
})
export type WorkflowAttempt = typeof WorkflowAttempt.Type

export const WorkflowRunDetail = Schema.Struct({
  attempts: Schema.Array(WorkflowAttempt),
  run: WorkflowRun
})
