-- The conversation of a work item (issue 9: "follow-ups in the same Slack thread or Linear issue go
-- to the same work item"): every follow-up message after the request that opened it, with who
-- wrote it and the delivery it came in, so each intake run sees the whole thread. One row per
-- delivery: a redelivered follow-up is not recorded twice.
CREATE TABLE work_item_messages (
  id bigserial PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  work_item_id text NOT NULL REFERENCES work_items (id) ON DELETE CASCADE,
  author text CHECK (length(author) <= 256),
  body text NOT NULL CHECK (length(body) <= 40000),
  source_delivery_id text NOT NULL CHECK (length(source_delivery_id) BETWEEN 1 AND 256),
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, source_delivery_id)
);

CREATE INDEX work_item_messages_item_idx ON work_item_messages (organization_id, work_item_id, id);
