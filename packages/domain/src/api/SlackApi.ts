/**
 * Connecting an organization to Slack through endpoints Bosun defines: `PUT` verifies the bot token
 * with Slack and stores it with the signing secret (ADMIN or above, audited, secrets sealed), `GET`
 * shows the workspace and bot user, `DELETE` disconnects.
 *
 * `SlackEventsApi` is the Events API request URL, `POST /slack/events`. Its signature is over the
 * exact body bytes, so the server handles it raw (no payload decoding, no session): the payload
 * schema documents what Slack sends; the headers are checked by the handler.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadGateway, BadRequest, Conflict, Forbidden, NotFound, Unauthorized } from "../ApiError.ts"
import { PathId } from "../Ids.ts"
import { SlackConnection, SlackConnectionSettings } from "../SlackConnection.ts"
import { SessionAuth } from "./Auth.ts"
import { LinearWebhookAck } from "./LinearApi.ts"

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

/**
 * An interactivity request (a button clicked under a Bosun message): form-encoded, its one field
 * `payload` the JSON of a `block_actions` interaction.
 */
export const SlackInteractionForm = Schema.Struct({ payload: Schema.String }).pipe(HttpApiSchema.asFormUrlEncoded())

/** The envelope of an Events API request: a `url_verification` challenge or an `event_callback`. */
export const SlackEventEnvelope = Schema.Struct({
  type: Schema.String,
  challenge: Schema.optional(Schema.String),
  team_id: Schema.optional(Schema.String),
  api_app_id: Schema.optional(Schema.String),
  event_id: Schema.optional(Schema.String),
  event_time: Schema.optional(Schema.Number),
  event: Schema.optional(Schema.Record(Schema.String, Schema.Unknown))
})

export class SlackEventsApi extends HttpApiGroup.make("slackEvents")
  .add(
    HttpApiEndpoint.post("receive", "/slack/events", {
      payload: SlackEventEnvelope,
      success: [Schema.Struct({ challenge: Schema.String }), LinearWebhookAck.pipe(HttpApiSchema.status(202))],
      error: [BadRequest, Unauthorized]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Receive a Slack Events API request",
        description:
          "Requires X-Slack-Request-Timestamp (Unix seconds, within 5 minutes of now) and X-Slack-Signature " +
          "(v0= hex HMAC-SHA256 of v0:{timestamp}:{raw body} under the workspace's signing secret). A " +
          "url_verification request signed with a connected workspace's secret is answered with its challenge; " +
          "an event_callback is acknowledged with 202 {data: {accepted, duplicate}} before anything is processed, " +
          "and an event_id already recorded (Slack's retries, X-Slack-Retry-Num) is a duplicate, not processed again."
      })
    ),
    HttpApiEndpoint.post("interact", "/slack/interactions", {
      payload: SlackInteractionForm,
      success: LinearWebhookAck,
      error: [BadRequest, Unauthorized]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Receive a Slack interactivity request",
        description:
          "The Slack app's Interactivity Request URL. Signed as the Events API's requests (X-Slack-Request-Timestamp, " +
          "X-Slack-Signature over the raw form body). A block_actions click on a plan's Approve or Reject button is " +
          "recorded once (by its trigger_id) and acknowledged with 200 {data: {accepted, duplicate}}; the inbox then " +
          "applies the action as the same reply in the thread would. Other interactions are acknowledged and ignored."
      })
    )
  )
  .prefix("/api/v1") {}
