-- The Postgres queue adapter (the embedded default for bosun-inbox, bosun-effects,
-- bosun-review-batches and their -dlq). A row is claimed by moving visible_at into the future
-- under FOR UPDATE SKIP LOCKED; a dead letter is the same row with queue '<name>-dlq'.

CREATE TABLE queue_messages (
  id bigserial PRIMARY KEY,
  queue text NOT NULL,
  body text NOT NULL,
  deliveries integer NOT NULL DEFAULT 0,
  visible_at timestamptz NOT NULL DEFAULT now(),
  last_error text,
  failed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX queue_messages_claim_idx ON queue_messages (queue, visible_at, id);
