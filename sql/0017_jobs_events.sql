-- The cluster's own tables (issue 7; spec: What the service does 6, 8, 9; Events 1-2).
--
-- jobs: one per workflow run, the Scheduler's record of it (lane, session, batch window, attempts,
-- cancellation). A webhook handler, API call or cron writes the run and its job in one
-- transaction; only the Scheduler changes `status` afterwards. The state machine is in
-- packages/domain/src/Jobs.ts.
CREATE TABLE jobs (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  run_id text NOT NULL UNIQUE REFERENCES workflow_runs (id) ON DELETE CASCADE,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  lane text NOT NULL CHECK (lane IN ('AGENT', 'REVIEW')),
  -- Jobs of one session (a chat thread, a ticket, a pull request) run one at a time, in order.
  session_key text,
  -- Reviews of one pull request coalesce while the batch window is open; a newer head supersedes.
  batch_key text,
  head_sha text,
  status text NOT NULL DEFAULT 'QUEUED'
    CHECK (status IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'SUPERSEDED')),
  attempt integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
  max_attempts integer NOT NULL DEFAULT 3 CHECK (max_attempts BETWEEN 1 AND 20),
  -- Not claimed before: the batch window's end, or a retry's backoff.
  not_before timestamptz NOT NULL DEFAULT now(),
  cancel_requested_at timestamptz,
  -- The claimed attempt's RunAttemptWorkflow was handed to the engine (a claim whose start was
  -- lost to a crash is started again by the next pass; the engine joins an existing execution).
  workflow_started boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX jobs_queued_idx ON jobs (lane, created_at, id) WHERE status = 'QUEUED';
CREATE INDEX jobs_running_idx ON jobs (lane) WHERE status = 'RUNNING';
CREATE INDEX jobs_session_idx ON jobs (session_key, created_at) WHERE status IN ('QUEUED', 'RUNNING');
CREATE INDEX jobs_batch_idx ON jobs (batch_key) WHERE status = 'QUEUED';

-- An attempt's progress: its heartbeat (lease), the runtime event cursor the flush has committed,
-- the sealed request's blob key, and how it ended.
ALTER TABLE workflow_attempts
  ADD COLUMN status text NOT NULL DEFAULT 'RUNNING'
    CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
  ADD COLUMN heartbeat_at timestamptz,
  ADD COLUMN runtime_cursor bigint NOT NULL DEFAULT 0,
  ADD COLUMN request_key text,
  ADD COLUMN error_code text,
  ADD COLUMN error_message text,
  ADD COLUMN usage jsonb NOT NULL DEFAULT '{}'::jsonb;

CREATE INDEX workflow_attempts_running_idx ON workflow_attempts (heartbeat_at) WHERE status = 'RUNNING';

-- The steps of an attempt (spec: States and transitions 3): when each ran, how many times its body
-- executed (a completed step is never re-run; the count shows it), and how it ended.
CREATE TABLE workflow_attempt_steps (
  attempt_id text NOT NULL REFERENCES workflow_attempts (id) ON DELETE CASCADE,
  step text NOT NULL CHECK (step IN ('prepare', 'acquire-sandbox', 'execute', 'publish', 'finish-attempt',
                                     'release-sandbox', 'notify-scheduler')),
  status text NOT NULL CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED')),
  executions integer NOT NULL DEFAULT 1 CHECK (executions >= 1),
  error text,
  started_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  PRIMARY KEY (attempt_id, step)
);

-- Runtime events of a run, in order, numbered per run across its attempts (spec: Events 1-2):
-- the audit source the live stream replays from.
CREATE TABLE workflow_events (
  run_id text NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
  seq bigint NOT NULL CHECK (seq >= 1),
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  attempt integer NOT NULL CHECK (attempt >= 1),
  type text NOT NULL,
  data jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, seq)
);
