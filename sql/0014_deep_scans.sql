-- Deep scans (spec: Resources "Deep scan"; Organization endpoints .../deep-scans): an agent's
-- audit of a whole repository pinned to one commit. The scan's status, timing, model and error
-- are its workflow run's (one run of type deep_scan per scan); this table holds what is the
-- scan's own: the pinned commit, coverage, the findings' count and decisions, the summary.

-- Lets tables that name an organization's repository reference (organization_id, id), so a row
-- can never point at another organization's repository.
ALTER TABLE repositories ADD CONSTRAINT repositories_organization_id_id_key UNIQUE (organization_id, id);

CREATE TABLE deep_scans (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text CHECK (length(id) BETWEEN 1 AND 128),
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text NOT NULL,
  run_id text NOT NULL UNIQUE REFERENCES workflow_runs (id) ON DELETE CASCADE,
  -- The default branch and its head commit when the scan was launched.
  default_branch text NOT NULL,
  head_sha text NOT NULL CHECK (head_sha ~ '^[0-9a-f]{40}([0-9a-f]{24})?$'),
  completion_status text CHECK (completion_status IN ('COMPLETE', 'PARTIAL')),
  finding_count integer NOT NULL DEFAULT 0 CHECK (finding_count >= 0),
  risk_level text CHECK (risk_level IN ('NONE', 'LOW', 'MEDIUM', 'HIGH', 'CRITICAL')),
  accepted_count integer NOT NULL DEFAULT 0 CHECK (accepted_count >= 0),
  pending_count integer NOT NULL DEFAULT 0 CHECK (pending_count >= 0),
  rejected_count integer NOT NULL DEFAULT 0 CHECK (rejected_count >= 0),
  summary text,
  fix_work_item_id text REFERENCES work_items (id) ON DELETE SET NULL,
  requested_by text REFERENCES users (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (organization_id, repository_id) REFERENCES repositories (organization_id, id) ON DELETE CASCADE
);

CREATE INDEX deep_scans_organization_idx ON deep_scans (organization_id, created_at DESC, id DESC);
CREATE INDEX deep_scans_repository_idx ON deep_scans (organization_id, repository_id, created_at DESC, id DESC);
