-- The transactional outbox: a row written in the same transaction as the change that needs a
-- side effect; its wake-up goes to a queue after commit. enqueued_at is when a wake-up was last
-- sent, done_at when a consumer finished the row (consumers skip rows already done).

CREATE TABLE outbox (
  id bigserial PRIMARY KEY,
  queue text NOT NULL CHECK (queue IN ('bosun-inbox', 'bosun-effects', 'bosun-review-batches')),
  kind text NOT NULL CHECK (length(kind) BETWEEN 1 AND 128),
  payload jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  enqueued_at timestamptz,
  done_at timestamptz
);

CREATE INDEX outbox_undone_idx ON outbox (enqueued_at NULLS FIRST, id) WHERE done_at IS NULL;
