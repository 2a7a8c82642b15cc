-- Reviews and their findings (issue 8: stable findings across pushes, coverage ledger).
-- pull_request_reviews: one row per review run of a pull request; coverage is the ledger of the
-- changed files the agent was given and those skipped with their reason; github_review_id is set
-- once the review is posted (publish reconciles through provider_effects before posting again).
CREATE TABLE pull_request_reviews (
  run_id text PRIMARY KEY CHECK (length(run_id) BETWEEN 1 AND 128),
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
  pull_request_number integer NOT NULL CHECK (pull_request_number > 0),
  head_sha text NOT NULL,
  summary text NOT NULL DEFAULT '',
  coverage jsonb NOT NULL DEFAULT '{"reviewed": [], "skipped": []}'::jsonb,
  github_review_id bigint,
  created_at timestamptz NOT NULL DEFAULT now(),
  posted_at timestamptz
);

CREATE INDEX pull_request_reviews_pr_idx
  ON pull_request_reviews (organization_id, repository_id, pull_request_number, created_at DESC);

-- A finding by its fingerprint, per pull request: posted once, then OPEN until a later review of a
-- changed file no longer reports it (RESOLVED) or a human dismisses it (DISMISSED, never raised again).
CREATE TABLE review_findings (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
  pull_request_number integer NOT NULL CHECK (pull_request_number > 0),
  fingerprint text NOT NULL CHECK (length(fingerprint) BETWEEN 1 AND 64),
  path text NOT NULL,
  start_line integer NOT NULL,
  end_line integer NOT NULL,
  side text NOT NULL CHECK (side IN ('LEFT', 'RIGHT')),
  severity text NOT NULL CHECK (severity IN ('CRITICAL', 'HIGH', 'MEDIUM', 'LOW', 'INFO')),
  category text NOT NULL,
  title text NOT NULL,
  -- INLINE when it was posted as a comment; OVERFLOW / OUTSIDE_DIFF when listed in the summary.
  placement text NOT NULL CHECK (placement IN ('INLINE', 'OVERFLOW', 'OUTSIDE_DIFF')),
  state text NOT NULL DEFAULT 'OPEN' CHECK (state IN ('OPEN', 'RESOLVED', 'DISMISSED')),
  github_comment_id bigint,
  github_thread_id text,
  first_run_id text NOT NULL,
  last_run_id text NOT NULL,
  dismissed_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  resolved_at timestamptz,
  UNIQUE (repository_id, pull_request_number, fingerprint)
);

CREATE INDEX review_findings_comment_idx ON review_findings (organization_id, github_comment_id)
  WHERE github_comment_id IS NOT NULL;

-- Outbound side effects (spec: What the service does 9, "Outbound side effects are recorded in
-- provider_effects"): a row per effect, keyed by an idempotency key written before the provider
-- call; after the call the result (e.g. the GitHub review id) is recorded. A retried step finds
-- the row: SUCCEEDED means done, PENDING means the call may have happened and must be reconciled
-- with the provider (looked up by the key it carries) before calling again.
CREATE TABLE provider_effects (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  run_id text,
  kind text NOT NULL CHECK (length(kind) BETWEEN 1 AND 64),
  idempotency_key text NOT NULL UNIQUE CHECK (length(idempotency_key) BETWEEN 1 AND 256),
  status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'SUCCEEDED', 'FAILED')),
  result jsonb,
  error text,
  attempts integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX provider_effects_run_idx ON provider_effects (organization_id, run_id);
