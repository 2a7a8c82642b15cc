-- A deep scan's findings and their triage (issue 10, "Deep scans"; spec: Deep scan resource).
-- A finding is what the agent reported, with Bosun's fingerprint (repository, CWE or category,
-- path, symbol), the outcome of its reproduction (VERIFIED / UNVERIFIED with why / NOT_REQUIRED)
-- and a human's decision. A rejection writes a suppression: the repository's later scans do not
-- raise that fingerprint again.
CREATE TABLE deep_scan_findings (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  deep_scan_id text NOT NULL REFERENCES deep_scans (id) ON DELETE CASCADE,
  repository_id text NOT NULL,
  fingerprint text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
  title text NOT NULL,
  severity text NOT NULL CHECK (severity IN ('LOW', 'MEDIUM', 'HIGH', 'CRITICAL')),
  category text NOT NULL,
  cwe text,
  path text NOT NULL,
  start_line integer NOT NULL CHECK (start_line >= 1),
  end_line integer NOT NULL CHECK (end_line >= start_line),
  symbol text NOT NULL,
  evidence jsonb NOT NULL,
  proposed_fix text NOT NULL,
  verification_status text NOT NULL CHECK (verification_status IN ('VERIFIED', 'UNVERIFIED', 'NOT_REQUIRED')),
  verification_reason text,
  reproduction jsonb,
  decision text NOT NULL DEFAULT 'PENDING' CHECK (decision IN ('PENDING', 'ACCEPTED', 'REJECTED')),
  reason_code text CHECK (reason_code IN ('false_positive', 'accepted_risk', 'not_applicable', 'wont_fix')),
  reason_note text,
  decided_by text REFERENCES users (id) ON DELETE SET NULL,
  decided_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (deep_scan_id, fingerprint),
  CHECK ((decision = 'REJECTED') = (reason_code IS NOT NULL)),
  FOREIGN KEY (organization_id, repository_id) REFERENCES repositories (organization_id, id) ON DELETE CASCADE
);

CREATE INDEX deep_scan_findings_scan_idx ON deep_scan_findings (organization_id, deep_scan_id);

CREATE TABLE deep_scan_suppressions (
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text NOT NULL,
  fingerprint text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
  reason_code text NOT NULL CHECK (reason_code IN ('false_positive', 'accepted_risk', 'not_applicable', 'wont_fix')),
  reason_note text,
  finding_id text REFERENCES deep_scan_findings (id) ON DELETE SET NULL,
  created_by text REFERENCES users (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organization_id, repository_id, fingerprint),
  FOREIGN KEY (organization_id, repository_id) REFERENCES repositories (organization_id, id) ON DELETE CASCADE
);

-- What the scan did not cover (PARTIAL), and how many findings its suppressions held back.
ALTER TABLE deep_scans
  ADD COLUMN coverage_skipped jsonb NOT NULL DEFAULT '[]'::jsonb,
  ADD COLUMN suppressed_count integer NOT NULL DEFAULT 0 CHECK (suppressed_count >= 0);
