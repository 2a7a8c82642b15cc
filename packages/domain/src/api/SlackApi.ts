/**
 * Connecting an organization to Slack (issue 9: "installing/connecting ... through endpoints you
 * define"): `PUT` verifies the bot token with Slack and stores it with the signing secret (ADMIN
 * or above, audited, secrets sealed), `GET` shows the workspace and bot user, `DELETE` disconnects.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { BadGateway, BadRequest, Conflict, Forbidden, NotFound } from "../ApiError.ts"
import { PathId } from "../Ids.ts"
import { SlackConnection, SlackConnectionSettings } from "../SlackConnection.ts"
import { SessionAuth } from "./Auth.ts"

export class SlackApi extends HttpApiGroup.make("slack")
  .add(
    HttpApiEndpoint.get("getConnection", "/organizations/:organization_id/slack-connection", {
      params: { organization_id: PathId },
      success: Schema.Struct({ data: SlackConnection }),
      error: NotFound
    }),
    HttpApiEndpoint.put("connect", "/organizations/:organization_id/slack-connection", {
      params: { organization_id: PathId },
      payload: SlackConnectionSettings,
      success: Schema.Struct({ data: SlackConnection }),
      error: [NotFound, Forbidden, BadRequest, Conflict, BadGateway]
    }),
    HttpApiEndpoint.delete("disconnect", "/organizations/:organization_id/slack-connection", {
      params: { organization_id: PathId },
      success: Schema.Struct({ data: Schema.Struct({ deleted: Schema.Boolean }) }),
      error: [NotFound, Forbidden]
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}
