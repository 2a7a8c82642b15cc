-- Agent connections (spec: Resources "Agent connection"; Authentication 3, 7): the agent's
-- provider credentials per organization, optionally overridden per repository. `auth` is a
-- sealed JSON object provider id -> credential; only its fingerprint and version leave the
-- database. Each write queues a catalog discovery, which the runtime work performs.
CREATE TABLE agent_connections (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text REFERENCES repositories (id) ON DELETE CASCADE,
  auth bytea NOT NULL,
  auth_version integer NOT NULL CHECK (auth_version >= 1),
  auth_fingerprint text NOT NULL,
  provider_ids text[] NOT NULL,
  updated_by text REFERENCES users (id) ON DELETE SET NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX agent_connections_scope_key ON agent_connections (organization_id, coalesce(repository_id, ''));

CREATE TABLE agent_catalog_discoveries (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text REFERENCES repositories (id) ON DELETE CASCADE,
  status text NOT NULL DEFAULT 'QUEUED' CHECK (status IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED')),
  credential_fingerprint text,
  configuration_fingerprint text,
  catalog jsonb NOT NULL DEFAULT '{"providers": [], "runtime_version": ""}'::jsonb,
  provider_version text,
  error text,
  workflow_run_id text REFERENCES workflow_runs (id) ON DELETE SET NULL,
  started_at timestamptz,
  finished_at timestamptz,
  last_successful_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX agent_catalog_discoveries_scope_idx ON agent_catalog_discoveries
  (organization_id, coalesce(repository_id, ''), updated_at DESC);
