-- The Mutex coordinator's leases (spec: What the service does 8, Coordinators, Mutex).
--
-- One row per lock key, the authoritative lease: the entity `Mutex/{key}` keeps none of it in
-- memory, so when the entity moves to another runner (its runner died, shards rebalanced) the
-- new instance grants nothing while a lease here is live, and an old holder's token stays valid
-- until it expires. Every transition is one conditional statement, judged by the database's
-- clock. The row outlives its releases so that `fence` keeps growing: a holder passes the fence
-- with its writes and a store refuses any fence lower than one it has seen.
--
-- Lock keys are not organization rows (`tracker-token:{org}` names an organization inside the
-- key), so the table has no organization_id and no foreign key.
CREATE TABLE mutex_leases (
  lock_key text PRIMARY KEY,
  -- The fence of the latest grant; never decreases.
  fence bigint NOT NULL CHECK (fence >= 1),
  -- The live or lapsed lease; all NULL once released.
  token text,
  holder text,
  acquired_at timestamptz,
  expires_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((token IS NULL) = (expires_at IS NULL) AND (token IS NULL) = (holder IS NULL))
);
