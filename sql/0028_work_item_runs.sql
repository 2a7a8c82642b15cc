-- The plan an intake run made for a change request (issue 9): the repository, the pull request's
-- title and the steps, posted for approval and given to the implement run once APPROVE comes.
ALTER TABLE work_items ADD COLUMN plan jsonb;
