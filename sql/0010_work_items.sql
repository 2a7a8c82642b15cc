-- Work items (spec: Resources "Work item"): a question, task or bug from GitHub, Slack, Linear or
-- the API, moving through the state machine of packages/domain/src/WorkItem.ts.
CREATE TABLE work_items (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text CHECK (length(id) BETWEEN 1 AND 128),
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('QUESTION', 'TASK', 'BUG', 'FEEDBACK')),
  source text NOT NULL CHECK (source IN ('SCM', 'CHAT', 'TRACKER', 'API')),
  source_url text,
  title text NOT NULL,
  summary text,
  state text NOT NULL DEFAULT 'OPEN'
    CHECK (state IN ('OPEN', 'WAITING', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'CANCELLED')),
  phase text NOT NULL DEFAULT 'INTAKE' CHECK (phase IN ('INTAKE', 'PLANNING', 'IMPLEMENTING', 'REVIEWING', 'DONE')),
  waiting_reason text CHECK (waiting_reason IN ('CONTEXT', 'APPROVAL', 'INPUT')),
  primary_repository_id text REFERENCES repositories (id) ON DELETE SET NULL,
  parent_work_item_id text REFERENCES work_items (id) ON DELETE SET NULL,
  parent_artifact_id text,
  active_run_id text REFERENCES workflow_runs (id) ON DELETE SET NULL,
  requested_by_login text,
  completed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((state = 'WAITING') = (waiting_reason IS NOT NULL))
);

CREATE INDEX work_items_organization_idx ON work_items (organization_id, updated_at DESC, id);
