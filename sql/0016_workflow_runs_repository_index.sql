-- The dashboard's run list of one repository (GET .../workflow-runs?repository_id=), newest first:
-- created_at, then id, descending, under the organization as every query of it filters.
CREATE INDEX workflow_runs_repository_idx
  ON workflow_runs (organization_id, repository_id, created_at DESC, id DESC);
