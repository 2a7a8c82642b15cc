-- GitHub deliveries join the one inbox pipeline of Slack and Linear: deliveries about one subject
-- are applied in the order they arrived. The subject is the pull request or issue
-- (`pr:{repository}:{number}`; a pull request's comments share its number), the installation
-- (`installation:{id}`) or the repository's pushes (`push:{repository}`), by GitHub's ids; null where
-- order does not matter. Rows recorded before this have none, and wait for nothing.
ALTER TABLE github_deliveries ADD COLUMN subject text CHECK (length(subject) BETWEEN 1 AND 512);

CREATE INDEX github_deliveries_pending_subject_idx ON github_deliveries (organization_id, subject, received_at)
  WHERE processed_at IS NULL AND subject IS NOT NULL;
