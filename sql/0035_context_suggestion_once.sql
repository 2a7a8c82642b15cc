-- A context suggestion is proposed once per primary and secondary repository (issue 10,
-- "Context suggestions": a rejected suggestion is not proposed again, an approved or pending one
-- not twice), whichever review noticed it first; detection inserts with ON CONFLICT DO NOTHING.
DELETE FROM context_suggestions c
USING context_suggestions earlier
WHERE c.organization_id = earlier.organization_id
  AND c.primary_repository_id = earlier.primary_repository_id
  AND lower(c.secondary_owner) = lower(earlier.secondary_owner)
  AND lower(c.secondary_name) = lower(earlier.secondary_name)
  AND (earlier.proposed_at, earlier.id) < (c.proposed_at, c.id);

CREATE UNIQUE INDEX context_suggestions_once_idx
  ON context_suggestions (organization_id, primary_repository_id, lower(secondary_owner), lower(secondary_name));
