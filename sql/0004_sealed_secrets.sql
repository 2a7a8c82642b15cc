-- Sealed secrets (spec: What the service does 7, Authentication 5, Secret-rotation procedure).
-- Every bytea column below holds a Bosun envelope (packages/server/src/crypto/Envelope.ts): the
-- key version sits in bytes 2..5, so rotation finds envelopes under an older key in SQL. Each
-- sealed column is listed in packages/server/src/crypto/SealedColumns.ts, which rotation walks.

-- The GitHub App of an organization; client_secret, private_key and webhook_secret are write-only.
CREATE TABLE github_apps (
  organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  github_app_id bigint NOT NULL CHECK (github_app_id > 0),
  slug text NOT NULL CHECK (length(slug) BETWEEN 1 AND 100),
  client_id text NOT NULL CHECK (length(client_id) BETWEEN 1 AND 255),
  client_secret bytea NOT NULL,
  private_key bytea NOT NULL,
  webhook_secret bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- User-managed secrets, referenced as ${secrets.NAME} from repository configuration.
CREATE TABLE organization_secrets (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL CHECK (name ~ '^[A-Za-z_][A-Za-z0-9_]{0,127}$'),
  value bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, name)
);

-- Master-key rotation runs; error says why a run FAILED. cursor_column indexes the sealed-column list and cursor_row_id is the
-- last row of that column done, so an interrupted run resumes where its last batch committed.
-- A run is worked on by the holder of its lease; an expired lease means its worker died.
CREATE TABLE secret_rotations (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  dry_run boolean NOT NULL,
  batch_size integer NOT NULL CHECK (batch_size BETWEEN 1 AND 200),
  target_key_version integer NOT NULL CHECK (target_key_version > 0),
  -- Names the key the run seals under (an HMAC of a fixed label, never the key): a worker whose
  -- active key has the same version but other bytes refuses the run.
  target_key_fingerprint text NOT NULL,
  status text NOT NULL DEFAULT 'QUEUED' CHECK (status IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED')),
  total_secrets integer NOT NULL DEFAULT 0,
  processed_secrets integer NOT NULL DEFAULT 0,
  remaining integer NOT NULL DEFAULT 0,
  failed_secrets integer NOT NULL DEFAULT 0,
  cursor_column integer NOT NULL DEFAULT 0,
  cursor_row_id text,
  lease_owner text,
  lease_expires_at timestamptz,
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz
);

-- Only one rotation is queued or running at a time.
CREATE UNIQUE INDEX secret_rotations_one_active_idx ON secret_rotations ((true))
  WHERE status IN ('QUEUED', 'RUNNING');
