-- The pull request an approved work item's implement run opened (issue 9: "the PR link is posted
-- back to the thread/ticket → the item follows the PR to merged/closed"): the item is found again
-- by its repository and number when GitHub says the pull request was merged or closed.
ALTER TABLE work_items ADD COLUMN pull_request_number integer CHECK (pull_request_number > 0);
ALTER TABLE work_items ADD COLUMN pull_request_url text CHECK (length(pull_request_url) <= 2048);
CREATE INDEX work_items_pull_request_idx ON work_items (organization_id, primary_repository_id, pull_request_number)
  WHERE pull_request_number IS NOT NULL;
