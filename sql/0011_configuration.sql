-- Configuration groups (spec: Resources "Repository configuration"): an organization's settings
-- (repository_id NULL) and a repository's overrides, one JSON object per group; the effective
-- configuration overlays defaults, organization and repository group by group
-- (packages/domain/src/RepositoryConfiguration.ts). Sandbox-readiness findings sit beside them.
CREATE TABLE configuration_groups (
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text REFERENCES repositories (id) ON DELETE CASCADE,
  group_name text NOT NULL CHECK (group_name IN ('agent', 'instructions', 'mcp', 'review_policy', 'sandbox', 'skills')),
  value jsonb NOT NULL,
  updated_by text REFERENCES users (id) ON DELETE SET NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX configuration_groups_key ON configuration_groups
  (organization_id, coalesce(repository_id, ''), group_name);

CREATE TABLE readiness_findings (
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
  code text NOT NULL,
  severity text NOT NULL CHECK (severity IN ('BLOCKING', 'WARNING')),
  message text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (repository_id, code)
);
