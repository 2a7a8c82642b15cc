-- The agent's device-code sign-in (spec: Coordinators, AgentDeviceAuth; What the service does 7, 10):
-- one row per AgentDeviceAuth entity, whose id the row shares (`${scope}:${org}:${repo}`, `-` for no
-- repository). The entity alone writes it; the dashboard reads the status from it. device_code,
-- access_token and refresh_token are Bosun envelopes bound to (device_authorizations, column, id)
-- and listed in packages/server/src/crypto/SealedColumns.ts; no other column holds a secret.
CREATE TABLE device_authorizations (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  repository_id text REFERENCES repositories (id) ON DELETE CASCADE,
  scope text NOT NULL CHECK (scope IN ('ORGANIZATION', 'REPOSITORY')),
  provider text NOT NULL CHECK (provider IN ('AGENT_ONE')),
  status text NOT NULL
    CHECK (status IN ('PENDING', 'AUTHORIZED', 'DENIED', 'EXPIRED', 'REAUTH_REQUIRED', 'CANCELLED', 'FAILED')),
  -- What the dashboard shows the user while PENDING (RFC 8628 §3.2); kept afterwards as a record.
  user_code text,
  verification_uri text,
  verification_uri_complete text,
  -- The polling interval, raised by 5 s on each `slow_down`; expires_at is the device code's end.
  interval_seconds integer CHECK (interval_seconds > 0),
  expires_at timestamptz,
  token_expires_at timestamptz,
  last_refreshed_at timestamptz,
  -- Why the flow ended or what the last failed attempt met; never a secret.
  error text,
  device_code bytea,
  access_token bytea,
  refresh_token bytea,
  -- The current flow (a new one per Start) and when its next poll or refresh is due: the alarm the
  -- entity keeps in the cluster's message storage is named after both. failures counts transient
  -- failures in a row, for the backoff.
  flow_id text NOT NULL,
  next_alarm_at timestamptz,
  failures integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (id = scope || ':' || organization_id || ':' || coalesce(repository_id, '-')),
  CHECK ((scope = 'REPOSITORY') = (repository_id IS NOT NULL))
);

CREATE INDEX device_authorizations_organization_idx ON device_authorizations (organization_id);
