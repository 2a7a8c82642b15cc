-- GitHub App webhook deliveries (issue 8; spec: What the service does 6, Events 3): one row per
-- X-GitHub-Delivery, written with its inbox outbox row in one transaction; a redelivery of the
-- same id finds the row and is acknowledged without being processed again. The body is kept for
-- the inbox consumer (and for an operator to look at); processed_at is when the consumer finished.
CREATE TABLE github_deliveries (
  delivery_id text PRIMARY KEY CHECK (length(delivery_id) BETWEEN 1 AND 128),
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  event text NOT NULL CHECK (length(event) BETWEEN 1 AND 64),
  action text,
  installation_id bigint,
  payload jsonb NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  processed_at timestamptz,
  -- Why the consumer did nothing with it (an event Bosun does not handle, a repository it does not know).
  ignored_reason text
);

CREATE INDEX github_deliveries_org_idx ON github_deliveries (organization_id, received_at DESC);
