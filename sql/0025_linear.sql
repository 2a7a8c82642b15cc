-- Linear, the issue tracker (issue 9; spec: Webhook endpoint `/linear/webhooks`, Authentication 4,
-- Events 3). An organization connects one Linear workspace: its webhook signing secret (sealed,
-- verifies `Linear-Signature`), the API token Bosun comments with (sealed), and Bosun's own Linear
-- user, whose assignment or mention makes an issue Bosun's work.
CREATE TABLE linear_connections (
  organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  linear_organization_id text NOT NULL UNIQUE CHECK (length(linear_organization_id) BETWEEN 1 AND 128),
  webhook_secret bytea NOT NULL,
  access_token bytea,
  app_user_id text CHECK (length(app_user_id) BETWEEN 1 AND 128),
  app_user_name text CHECK (length(app_user_name) BETWEEN 1 AND 128),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- One row per `Linear-Delivery`, written with its inbox outbox row in one transaction; a repeated
-- id is acknowledged as a duplicate and not processed again (as github_deliveries).
CREATE TABLE linear_deliveries (
  delivery_id text PRIMARY KEY CHECK (length(delivery_id) BETWEEN 1 AND 128),
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  event text NOT NULL CHECK (length(event) BETWEEN 1 AND 64),
  action text,
  payload jsonb NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  processed_at timestamptz,
  ignored_reason text
);

CREATE INDEX linear_deliveries_org_idx ON linear_deliveries (organization_id, received_at DESC);

-- One thread or ticket is one work item (issue 9): its source's session key (`linear:{issue id}`,
-- `slack:{team}:{channel}:{thread}`, `github:{repo}:{issue}`), unique per organization.
ALTER TABLE work_items ADD COLUMN session_key text CHECK (length(session_key) BETWEEN 1 AND 512);
CREATE UNIQUE INDEX work_items_session_idx ON work_items (organization_id, session_key) WHERE session_key IS NOT NULL;
