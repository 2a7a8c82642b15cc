/**
 * An organization's connection to Slack, the chat provider (docs/interface.md names no
 * endpoint for it, so Bosun defines `PUT/GET/DELETE .../slack-connection`, docs/connect-slack.md). The
 * operator gives the Slack app's bot token and signing secret; Bosun asks Slack (`auth.test`) which
 * workspace and bot user the token belongs to and records those. Both secrets are write-only:
 * sealed on arrival, never returned.
 */
import { Schema } from "effect"
import { HeaderSafeText } from "./HeaderSafe.ts"

const Text = (max: number) => Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(max))

export const SlackConnectionSettings = Schema.Struct({
  /** The app's bot token (`xoxb-...`), which Bosun posts and reads threads with. */
  bot_token: HeaderSafeText(1024),
  /** The app's signing secret, which verifies `X-Slack-Signature` on `/api/v1/slack/events`. */
  signing_secret: Text(1024)
})
export type SlackConnectionSettings = typeof SlackConnectionSettings.Type

export const SlackConnection = Schema.Struct({
  team_id: Schema.String,
  team_name: Schema.NullOr(Schema.String),
  bot_user_id: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String
})
export type SlackConnection = typeof SlackConnection.Type
