-- Repository context suggestions (spec: Resources "Context suggestion"): another repository
-- proposed as context for a primary one; approving adds it to the primary's
-- secondary_repository_ids (configuration group "agent").
CREATE TABLE context_suggestions (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text CHECK (length(id) BETWEEN 1 AND 128),
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  primary_repository_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
  secondary_repository_id text REFERENCES repositories (id) ON DELETE SET NULL,
  secondary_owner text NOT NULL,
  secondary_name text NOT NULL,
  -- Whether the GitHub App can read the secondary repository.
  access_valid boolean NOT NULL DEFAULT true,
  source text NOT NULL,
  reason text,
  state text NOT NULL DEFAULT 'PROPOSED' CHECK (state IN ('PROPOSED', 'APPROVED', 'REJECTED')),
  proposed_at timestamptz NOT NULL DEFAULT now(),
  decided_at timestamptz,
  decided_by text REFERENCES users (id) ON DELETE SET NULL
);

CREATE INDEX context_suggestions_primary_idx ON context_suggestions (organization_id, primary_repository_id, proposed_at DESC);
