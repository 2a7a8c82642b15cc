-- Configuration written at two levels, field by field (each configuration_groups row now holds
-- only the fields its level sets; a row written before holds its whole group, which reads the
-- same). MCP servers' headers are secrets: sealed here, one envelope per server and level, and
-- never in configuration_groups. The repository's .bosun.yaml as last read from its default
-- branch, so the read form can show its values with source FILE.

CREATE TABLE mcp_server_secrets (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text REFERENCES repositories (id) ON DELETE CASCADE,
  server_name text NOT NULL CHECK (server_name ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
  -- Sealed JSON object: header name -> value.
  headers bytea NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX mcp_server_secrets_key ON mcp_server_secrets
  (organization_id, coalesce(repository_id, ''), server_name);

CREATE TABLE repository_config_files (
  repository_id text PRIMARY KEY REFERENCES repositories (id) ON DELETE CASCADE,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  path text NOT NULL,
  ref text NOT NULL,
  found boolean NOT NULL,
  -- The file's settings when it is valid; null when it is absent or invalid.
  settings jsonb,
  error text,
  read_at timestamptz NOT NULL DEFAULT now()
);

-- The last minimal agent turn of a scope's agent connection (its "Test"): what the first-day
-- checklist and the agent-connection screen show. One row per scope, replaced by each test.
CREATE TABLE model_turn_tests (
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text REFERENCES repositories (id) ON DELETE CASCADE,
  result jsonb NOT NULL,
  tested_at timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX model_turn_tests_scope ON model_turn_tests (organization_id, coalesce(repository_id, ''));
