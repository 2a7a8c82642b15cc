/**
 * Slack channels of an organization (docs/interface.md: Organization endpoints): `PUT
 * .../slack/channels/{channel_id}/passive-listening` turns passive listening on or off (ADMIN
 * or above); the list serves the dashboard. The path segment `slack` is the one docs/interface.md names.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Forbidden, NotFound } from "../ApiError.ts"
import { ChatChannel, PassiveListeningUpdate } from "../ChatChannel.ts"
import { ChannelId, PathId } from "../Ids.ts"
import { SessionAuth } from "./Auth.ts"

export class ChatApi extends HttpApiGroup.make("chat")
  .add(
    HttpApiEndpoint.get("listChannels", "/organizations/:organization_id/slack/channels", {
      params: { organization_id: PathId },
      success: Schema.Struct({ data: Schema.Array(ChatChannel) }),
      error: NotFound
    }),
    HttpApiEndpoint.put(
      "setPassiveListening",
      "/organizations/:organization_id/slack/channels/:channel_id/passive-listening",
      {
        params: { organization_id: PathId, channel_id: ChannelId },
        payload: PassiveListeningUpdate,
        success: Schema.Struct({ data: ChatChannel }),
        error: [NotFound, Forbidden]
      }
    )
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}
