-- Repositories an organization's GitHub App reaches, and the Slack channels it can listen in
-- (spec: Resources "Repository", "Chat channel"). Rows arrive with the GitHub and Slack
-- integrations; the organization API reads them and toggles enabled / passive_enabled.

CREATE TABLE repositories (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text CHECK (length(id) BETWEEN 1 AND 128),
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  github_repository_id bigint,
  owner text NOT NULL,
  name text NOT NULL,
  default_branch text NOT NULL DEFAULT 'main',
  -- Reviews run only on enabled repositories (PATCH .../repositories/{id} pauses them).
  enabled boolean NOT NULL DEFAULT true,
  -- False once the App lost access (uninstalled, repository removed from the installation).
  available boolean NOT NULL DEFAULT true,
  readiness_status text NOT NULL DEFAULT 'NOT_RUN'
    CHECK (readiness_status IN ('NOT_RUN', 'READY', 'WARNING', 'BLOCKING')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, owner, name)
);

CREATE UNIQUE INDEX repositories_github_id_idx ON repositories (organization_id, github_repository_id)
  WHERE github_repository_id IS NOT NULL;

CREATE TABLE chat_channels (
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  id text NOT NULL CHECK (length(id) BETWEEN 1 AND 255),
  name text NOT NULL,
  is_private boolean NOT NULL DEFAULT false,
  -- Passive listening: Bosun reads the channel's messages without being mentioned.
  passive_enabled boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organization_id, id)
);
