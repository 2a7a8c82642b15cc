-- Workflow runs and their attempts (spec: Resources "Workflow run", "Workflow attempt"; Run
-- lifecycle). A webhook, API call or cron writes the run; the Scheduler creates attempts, one
-- RunAttemptWorkflow each, whose id is `runId:attempt`.
CREATE TABLE workflow_runs (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text CHECK (length(id) BETWEEN 1 AND 128),
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text REFERENCES repositories (id) ON DELETE SET NULL,
  workflow_type text NOT NULL,
  status text NOT NULL DEFAULT 'RECEIVED'
    CHECK (status IN ('RECEIVED', 'QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
  current_phase text,
  base_sha text,
  head_sha text,
  pull_request_number integer,
  model text,
  provider text,
  sandbox_provider text,
  sandbox_id text,
  input_snapshot jsonb NOT NULL DEFAULT '{}'::jsonb,
  usage jsonb NOT NULL DEFAULT '{}'::jsonb,
  error_code text,
  error_message text,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX workflow_runs_organization_idx ON workflow_runs (organization_id, created_at DESC, id);

CREATE TABLE workflow_attempts (
  id text PRIMARY KEY,
  run_id text NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
  attempt integer NOT NULL CHECK (attempt >= 1),
  worker_id text,
  sandbox_provider text,
  sandbox_id text,
  exit_reason text,
  retryable boolean NOT NULL DEFAULT false,
  started_at timestamptz,
  finished_at timestamptz,
  UNIQUE (run_id, attempt),
  CHECK (id = run_id || ':' || attempt)
);
