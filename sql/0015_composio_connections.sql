-- Connected apps (spec: Organization endpoints `composio/connections`): the latest connection
-- request of each member of an organization for each Composio toolkit. ACTIVE is a toolkit
-- that needs no authorization; AUTHORIZATION_REQUIRED waits for the member to finish Composio's
-- hosted connect link, whose expiry is kept. The link itself is a bearer URL and is not stored;
-- `composio_user_id` is the user id Bosun gives Composio for this member in this organization.
CREATE TABLE composio_connections (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  toolkit_slug text NOT NULL CHECK (toolkit_slug ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
  composio_user_id text NOT NULL,
  composio_auth_config_id text,
  composio_connected_account_id text,
  status text NOT NULL CHECK (status IN ('ACTIVE', 'AUTHORIZATION_REQUIRED')),
  redirect_expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (
    (status = 'AUTHORIZATION_REQUIRED') =
      (composio_connected_account_id IS NOT NULL AND redirect_expires_at IS NOT NULL)
  )
);

CREATE UNIQUE INDEX composio_connections_member_toolkit_key
  ON composio_connections (organization_id, user_id, toolkit_slug);
