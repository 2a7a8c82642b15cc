-- Deliveries about one subject are applied in the order they arrived (issue 9): a Linear issue's
-- comment must not be read before the delivery that created the issue's work item, though the
-- inbox handles several messages at once. The subject is the Linear issue id or the Slack thread;
-- null where order does not matter.
ALTER TABLE linear_deliveries ADD COLUMN subject text CHECK (length(subject) BETWEEN 1 AND 512);
ALTER TABLE slack_deliveries ADD COLUMN subject text CHECK (length(subject) BETWEEN 1 AND 512);

CREATE INDEX linear_deliveries_pending_subject_idx ON linear_deliveries (organization_id, subject, received_at)
  WHERE processed_at IS NULL AND subject IS NOT NULL;
CREATE INDEX slack_deliveries_pending_subject_idx ON slack_deliveries (organization_id, subject, received_at)
  WHERE processed_at IS NULL AND subject IS NOT NULL;
