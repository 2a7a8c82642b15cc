-- Slack Events API deliveries (issue 9; spec: What the service does 3, Events 3): one row per
-- `event_id`, written with its inbox outbox row in one transaction. Slack retries a delivery it got
-- no quick answer for (`X-Slack-Retry-Num`) with the same event_id, which is acknowledged as a
-- duplicate and not processed again. The columns are linear_deliveries' (one repository module
-- serves both): `event` is the inner event's type, `action` its subtype.
CREATE TABLE slack_deliveries (
  delivery_id text PRIMARY KEY CHECK (length(delivery_id) BETWEEN 1 AND 128),
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  event text NOT NULL CHECK (length(event) BETWEEN 1 AND 64),
  action text,
  payload jsonb NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  processed_at timestamptz,
  ignored_reason text
);

CREATE INDEX slack_deliveries_org_idx ON slack_deliveries (organization_id, received_at DESC);
