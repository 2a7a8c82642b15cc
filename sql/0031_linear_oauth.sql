-- Linear OAuth tokens that expire (issue 9, "Linear token refresh is serialized by the Mutex
-- `tracker-token:{org}`"). A connection made with an OAuth grant keeps, sealed like the access
-- token, the refresh token and the OAuth application's client secret, with the client id and when
-- the access token expires. Linear rotates the refresh token on every refresh, so exactly one
-- refresh may be in flight per organization: the Mutex makes it so across runners, and the row
-- is rewritten with the new pair in one statement.
ALTER TABLE linear_connections
  ADD COLUMN refresh_token bytea,
  ADD COLUMN oauth_client_id text CHECK (length(oauth_client_id) BETWEEN 1 AND 256),
  ADD COLUMN oauth_client_secret bytea,
  ADD COLUMN access_token_expires_at timestamptz,
  ADD COLUMN access_token_refreshed_at timestamptz,
  ADD CONSTRAINT linear_connections_oauth_whole CHECK (
    (refresh_token IS NULL AND oauth_client_id IS NULL AND oauth_client_secret IS NULL
      AND access_token_expires_at IS NULL)
    OR (refresh_token IS NOT NULL AND oauth_client_id IS NOT NULL AND oauth_client_secret IS NOT NULL
      AND access_token_expires_at IS NOT NULL AND access_token IS NOT NULL)
  );
