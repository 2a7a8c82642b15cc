-- The head of each repository's default branch as the last push to it said (issue 8: push to the
-- default branch): deep scans pin to default_branch_sha, so a scan reads one known commit rather
-- than whatever the branch points at when its sandbox clones. default_branch_pushed_at is when
-- GitHub says that push happened (the delivery's processing time when it does not say); a push
-- older than the one recorded, e.g. a redelivery, leaves both alone.
ALTER TABLE repositories
  ADD COLUMN default_branch_sha text CHECK (default_branch_sha ~ '^[0-9a-f]{40}([0-9a-f]{24})?$'),
  ADD COLUMN default_branch_pushed_at timestamptz;
