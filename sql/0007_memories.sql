-- What Bosun learns (spec: Resources "Memory"): conventions proposed from review feedback or by
-- people, approved (or rejected) by an organization's admins, then enabled or disabled.
CREATE TABLE memories (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text CHECK (length(id) BETWEEN 1 AND 128),
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text REFERENCES repositories (id) ON DELETE CASCADE,
  scope text NOT NULL CHECK (scope IN ('ORGANIZATION', 'REPOSITORY')),
  lifecycle text NOT NULL DEFAULT 'PROPOSED' CHECK (lifecycle IN ('PROPOSED', 'APPROVED', 'REJECTED', 'ARCHIVED')),
  enabled boolean NOT NULL DEFAULT false,
  convention text NOT NULL,
  purpose text,
  rationale text,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  proposed_by text REFERENCES users (id) ON DELETE SET NULL,
  approved_at timestamptz,
  approved_by text REFERENCES users (id) ON DELETE SET NULL,
  last_toggled_at timestamptz,
  last_toggled_by text REFERENCES users (id) ON DELETE SET NULL,
  source_actor text,
  source_finding_id text,
  source_run_id text,
  source_type text,
  source_url text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((scope = 'REPOSITORY') = (repository_id IS NOT NULL)),
  CHECK (lifecycle = 'APPROVED' OR NOT enabled)
);

CREATE INDEX memories_organization_idx ON memories (organization_id, created_at DESC, id);
