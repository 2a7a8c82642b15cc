-- Work-item actions taken in a provider (issue 9: "waits for APPROVE ... from the dashboard, a
-- Slack button or a reply"): the audit row of an approval clicked in Slack or replied in a thread
-- names the provider's user, who has no Bosun account. `actor_external` is
-- `{provider}:{workspace}:{user}` (`slack:T0001:U0002`), never a name that could change.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_actor_kind_check;
ALTER TABLE audit_events
  ADD COLUMN actor_external text CHECK (length(actor_external) BETWEEN 1 AND 256),
  ADD CONSTRAINT audit_events_actor_kind_check CHECK (
    actor_kind IN ('user', 'operator')
    OR (actor_kind = 'provider_user' AND actor_external IS NOT NULL)
  );
