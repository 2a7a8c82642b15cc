-- What Bosun learns from review feedback (issue 10, "Memories"; spec: Resources "Memory").
--
-- memory_sources: every piece of feedback a memory was distilled from — the first one and each
-- later one that restated it (a duplicate proposal is merged into the memory it restates, its
-- provenance appended here, instead of being proposed twice). A distill run records at most one
-- source (UNIQUE source_run_id), so a publish step that runs again appends nothing.
--
-- memory_uses / memory_finding_effects: the measured effect of a memory — the runs whose prompt
-- carried it, and the findings it shaped or suppressed in those runs (the feedback on a shaped
-- finding afterwards is that finding's state in review_findings).
ALTER TABLE memories ADD COLUMN proposed_by_login text;

CREATE TABLE memory_sources (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  memory_id text NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  source_type text NOT NULL CHECK (source_type IN ('REVIEW_REPLY', 'THUMBS_DOWN', 'REMEMBER_COMMAND', 'MANUAL')),
  source_url text,
  source_comment_id bigint,
  pull_request_number integer,
  file_path text,
  language text,
  source_finding_id text,
  source_run_id text UNIQUE,
  source_actor text,
  excerpt text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX memory_sources_memory_idx ON memory_sources (organization_id, memory_id, created_at);

CREATE TABLE memory_uses (
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  memory_id text NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  run_id text NOT NULL,
  workflow_type text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (memory_id, run_id)
);

CREATE TABLE memory_finding_effects (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  memory_id text NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  run_id text NOT NULL,
  effect text NOT NULL CHECK (effect IN ('SHAPED', 'SUPPRESSED')),
  repository_id text NOT NULL,
  pull_request_number integer NOT NULL,
  -- The shaped finding's; a suppressed finding was never raised, so it has none.
  fingerprint text,
  path text NOT NULL,
  note text,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((effect = 'SHAPED') = (fingerprint IS NOT NULL))
);

CREATE INDEX memory_finding_effects_memory_idx ON memory_finding_effects (organization_id, memory_id);
