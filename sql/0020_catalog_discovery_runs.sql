-- Catalog discoveries run as workflow runs (issue 7: catalog discovery). The newest discovery of a
-- scope is the one asked for last, whatever was updated since: order by when it was created (the
-- clock at the insert, which follows the scope's row lock, not the transaction's start).
ALTER TABLE agent_catalog_discoveries ADD COLUMN created_at timestamptz;
UPDATE agent_catalog_discoveries SET created_at = updated_at;
ALTER TABLE agent_catalog_discoveries ALTER COLUMN created_at SET NOT NULL, ALTER COLUMN created_at SET DEFAULT clock_timestamp();

DROP INDEX agent_catalog_discoveries_scope_idx;
CREATE INDEX agent_catalog_discoveries_scope_idx ON agent_catalog_discoveries
  (organization_id, coalesce(repository_id, ''), created_at DESC);
