-- Sessions, instance operators and audit evidence (spec: Authentication 1-3, 9; Resources:
-- audit evidence). A session is found by the SHA-256 of its token: the token itself (the
-- bosun_session cookie) is never stored.

-- SUPER_USER is an instance role (granted by an operator with the CLI): it reaches every
-- organization with the rights of its most privileged role.
ALTER TABLE users ADD COLUMN instance_role text CHECK (instance_role IN ('SUPER_USER'));

-- Where a membership comes from: GITHUB memberships follow the user's GitHub organization role
-- at each sign-in (and go when it does); OPERATOR memberships (the CLI) are left alone by it.
ALTER TABLE memberships ADD COLUMN source text NOT NULL DEFAULT 'OPERATOR' CHECK (source IN ('GITHUB', 'OPERATOR'));

CREATE TABLE sessions (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  token_hash text NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  -- Sliding: pushed forward on use (at most once a minute), never past absolute_expires_at.
  expires_at timestamptz NOT NULL,
  absolute_expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);

CREATE INDEX sessions_user_id_idx ON sessions (user_id);

-- Who did what, when, under which request: never a secret value.
CREATE TABLE audit_events (
  id bigserial PRIMARY KEY,
  organization_id text REFERENCES organizations (id) ON DELETE SET NULL,
  -- 'user' (actor_user_id set) or 'operator' (the bootstrap token or the CLI).
  actor_kind text NOT NULL CHECK (actor_kind IN ('user', 'operator')),
  actor_user_id text REFERENCES users (id) ON DELETE SET NULL,
  action text NOT NULL CHECK (length(action) BETWEEN 1 AND 128),
  target text,
  request_id text,
  details jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX audit_events_organization_idx ON audit_events (organization_id, created_at DESC);
