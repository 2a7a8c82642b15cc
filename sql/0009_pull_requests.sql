-- Pull requests Bosun reviews (spec: Resources "Pull-request list item"), filled from GitHub
-- webhooks; findings counts are kept by the review pipeline.
CREATE TABLE pull_requests (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text CHECK (length(id) BETWEEN 1 AND 128),
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
  number integer NOT NULL CHECK (number > 0),
  title text NOT NULL,
  author_login text,
  state text NOT NULL DEFAULT 'OPEN' CHECK (state IN ('OPEN', 'CLOSED', 'MERGED')),
  review_status text NOT NULL DEFAULT 'NOT_REVIEWED',
  open_findings integer NOT NULL DEFAULT 0 CHECK (open_findings >= 0),
  resolved_findings integer NOT NULL DEFAULT 0 CHECK (resolved_findings >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (repository_id, number)
);

CREATE INDEX pull_requests_listing_idx ON pull_requests (organization_id, updated_at DESC, id DESC);
