-- Slack, the chat provider (issue 9; spec: What the service does 3, Authentication 4, Chat channel).
-- An organization connects one Slack workspace (team): the bot token Bosun posts with and the
-- signing secret that verifies `X-Slack-Signature`, both sealed; the team and Bosun's bot user as
-- Slack's `auth.test` reported them when the token was given.
CREATE TABLE slack_connections (
  organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  team_id text NOT NULL UNIQUE CHECK (length(team_id) BETWEEN 1 AND 64),
  team_name text CHECK (length(team_name) <= 256),
  bot_user_id text NOT NULL CHECK (length(bot_user_id) BETWEEN 1 AND 64),
  bot_token bytea NOT NULL,
  signing_secret bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- An outbox row whose wake-up went to a dead-letter queue: the relay must not send it again on
-- its own (only an operator's replay does), or a failing effect would go round every
-- resend period for ever.
ALTER TABLE outbox ADD COLUMN dead_lettered_at timestamptz;
