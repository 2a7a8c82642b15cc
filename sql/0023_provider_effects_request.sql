-- The request an outbound effect was to make (issue 8: "recorded in provider_effects with an
-- idempotency key before the call, reconciled after"): written in the transaction that decides
-- the effect, so a publish step that runs again makes the same call — or finds that it was made —
-- instead of deciding anew from state its first run already changed. Holds no secret (review text,
-- comment anchors); credentials are fetched at call time.
ALTER TABLE provider_effects ADD COLUMN request jsonb NOT NULL DEFAULT '{}'::jsonb;
