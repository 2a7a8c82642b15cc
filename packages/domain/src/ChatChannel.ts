/**
 * A Slack channel Bosun is in (docs/interface.md: Resources "Chat channel"); `passive_enabled` lets
 * it read the channel without being mentioned.
 */
import { Schema } from "effect"

export const ChatChannel = Schema.Struct({
  id: Schema.String,
  is_private: Schema.Boolean,
  name: Schema.String,
  passive_enabled: Schema.Boolean
})
export type ChatChannel = typeof ChatChannel.Type

export const PassiveListeningUpdate = Schema.Struct({ enabled: Schema.Boolean })
