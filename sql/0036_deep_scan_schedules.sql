-- Recurring deep scans (issue 10, "Deep scans: schedules"): a repository's cron expression (UTC)
-- and what the cluster's cron did with it — when it runs next, when it last ran, the scan and run
-- it started (or why it could not). One schedule per repository.
CREATE TABLE deep_scan_schedules (
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
  cron text NOT NULL CHECK (length(cron) BETWEEN 1 AND 200),
  next_run_at timestamptz NOT NULL,
  last_run_at timestamptz,
  last_deep_scan_id text REFERENCES deep_scans (id) ON DELETE SET NULL,
  last_run_id text,
  last_error text,
  updated_by text REFERENCES users (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (repository_id)
);

CREATE INDEX deep_scan_schedules_due_idx ON deep_scan_schedules (next_run_at);
